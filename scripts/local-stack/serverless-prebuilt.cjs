'use strict';
/**
 * Local only: lets `serverless offline` run the bundles `npm start` built itself
 * (scripts/local-stack/build.ts, one esbuild call for every function, while the emulators start)
 * instead of having serverless-esbuild build them again one by one.
 *
 * It acts only when SWITCHBOARD_PREBUILT_DIR names that build (npm start sets it for its own
 * serverless offline); `serverless package` and `deploy` never see it set and bundle with
 * serverless-esbuild as before. When set, every function is marked `skipEsbuild` (serverless-esbuild's
 * per-function opt-out), serverless offline's `location` points at the build, and serverless-esbuild's
 * scratch folder moves into it too, so that two `npm start` of one checkout never share, create or
 * delete each other's folders; and its file watcher is off (it would only clean up running functions).
 *
 * The queues named in SWITCHBOARD_OWN_QUEUES (function names, comma-separated) lose their SQS event
 * here: npm start polls them itself and invokes their function through the Lambda invoke API
 * (scripts/start.ts). One more serverless-offline-sqs poller (the mail-sync queue's) made a function
 * first loaded after another instance stopped hang until its timeout (test/e2e/start.test.ts).
 */
class PrebuiltBundles {
  constructor(serverless) {
    const dir = process.env.SWITCHBOARD_PREBUILT_DIR;
    if (!dir) return;
    const service = serverless.service;
    for (const fn of Object.values(service.functions ?? {})) fn.skipEsbuild = true;
    for (const name of (process.env.SWITCHBOARD_OWN_QUEUES ?? '').split(',').filter(Boolean)) {
      const fn = service.functions?.[name];
      if (fn) fn.events = (fn.events ?? []).filter((event) => !event.sqs);
    }
    service.custom = service.custom ?? {};
    service.custom['serverless-offline'] = { ...(service.custom['serverless-offline'] ?? {}), location: dir };
    // No file watching: serverless-esbuild watches every .js/.ts file of the checkout in offline mode and, on
    // any change, rebuilds (nothing here: the bundles are npm start's) and tells serverless offline to clean
    // up its loaded functions, which drops a function being loaded or run at that moment.
    service.custom.esbuild = { ...(service.custom.esbuild ?? {}), outputWorkFolder: `${dir}/.esbuild`, watch: { pattern: [], ignore: [] } };
    this.hooks = {};
  }
}

module.exports = PrebuiltBundles;
