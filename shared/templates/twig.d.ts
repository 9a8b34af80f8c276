/**
 * twig.js 1.x ships no types. This declares only what shared/templates/render.ts uses: the public
 * `twig()`/`cache()`/`extend()` exports, plus the internals that `extend()` hands out and that the
 * renderer hardens (registries, the value resolver, the output joiner and the remote loader).
 */
declare module 'twig' {
  namespace Twig {
    type TwigFunction = (this: unknown, ...args: unknown[]) => unknown;

    /** `Twig.output` returns a string or a `Twig.Markup` (a String object); both have a length. */
    type TwigOutput = string | { readonly length: number; valueOf(): string };

    interface Params {
      data: string;
      autoescape?: boolean;
      rethrow?: boolean;
      strict_variables?: boolean;
      allowInlineIncludes?: boolean;
    }

    interface Template {
      /** The compiled token tree (plain objects and arrays). */
      readonly tokens: unknown;
      /** Synchronous render; returns a primitive string. */
      render(context?: Record<string, unknown>): string;
    }

    interface ExpressionHandler {
      parse: (this: unknown, token: Record<string, unknown>, ...rest: unknown[]) => unknown;
    }

    interface LogicHandler {
      compile: (this: unknown, token: Record<string, unknown>) => unknown;
    }

    interface Internals {
      functions: Record<string, TwigFunction | undefined>;
      filters: Record<string, TwigFunction | undefined>;
      tests: Record<string, TwigFunction | undefined>;
      output: (this: unknown, chunks: unknown[]) => TwigOutput;
      expression: {
        resolveAsync: TwigFunction;
        handler: Record<string, ExpressionHandler | undefined>;
      };
      logic: {
        handler: Record<string, LogicHandler | undefined>;
      };
      Templates: {
        loadRemote: TwigFunction;
      };
      [key: symbol]: unknown;
    }

    interface Exports {
      twig(params: Params): Template;
      cache(enabled: boolean): void;
      extend(fn: (internals: Internals) => void): void;
    }
  }

  const Twig: Twig.Exports;
  export = Twig;
}
