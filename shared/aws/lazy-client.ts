/**
 * An AWS SDK client made on first use instead of at module init: constructing a client costs a
 * cold start about 1 to 4 ms (its configuration resolved, its middleware stack built), and many
 * requests of a function never call S3, EventBridge Scheduler or Secrets Manager. The answer stands
 * for the client in every way (a Proxy: properties, methods, spies and mocks reach the one client),
 * so callers keep `s3.send(…)` and `getSignedUrl(s3, …)`.
 */
export function lazyClient<T extends object>(make: () => T): T {
  let client: T | undefined;
  const real = () => (client ??= make());
  return new Proxy({} as T, {
    get: (_, property) => {
      const value = Reflect.get(real(), property);
      return typeof value === 'function' ? value.bind(real()) : value;
    },
    set: (_, property, value) => Reflect.set(real(), property, value),
    has: (_, property) => Reflect.has(real(), property),
    defineProperty: (_, property, descriptor) => Reflect.defineProperty(real(), property, descriptor),
    deleteProperty: (_, property) => Reflect.deleteProperty(real(), property),
    getOwnPropertyDescriptor: (_, property) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(real(), property);
      // A Proxy may not report a property its target lacks as non-configurable.
      return descriptor && { ...descriptor, configurable: true };
    },
    ownKeys: () => Reflect.ownKeys(real()),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
}
