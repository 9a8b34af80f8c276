'use strict';
const Module = require('node:module');
const { join } = require('node:path');

/**
 * Local only: lets `serverless offline` run the bundles `npm start` built itself
 * (scripts/local-stack/build.ts, one esbuild call for every function, while the emulators start)
 * instead of having serverless-esbuild build them again one by one.
 *
 * It acts only when SWITCHBOARD_PREBUILT_DIR names that build (npm start sets it for its own
 * serverless offline); `serverless package` and `deploy` never see it set and bundle with
 * serverless-esbuild as before. When set, serverless offline's `location` points at the build, and
 * serverless-esbuild is not loaded at all: osls loads the plugins in the order serverless.yml lists
 * them, this one first, and here serverless-esbuild's module is already in require's cache as a
 * plugin that does nothing. It would have nothing to do (every bundle is built), yet loading it costs
 * about 0.9 s of CPU (effect, archiver, chokidar…), a third of serverless offline's start; and in
 * offline mode it would watch every .js/.ts file of the checkout and, on any change, tell serverless
 * offline to clean up its loaded functions, dropping a function being loaded or run at that moment.
 *
 * The queues named in SWITCHBOARD_OWN_QUEUES (function names, comma-separated) lose their SQS event
 * here: npm start polls them itself and invokes their function through the Lambda invoke API
 * (scripts/start.ts). One more serverless-offline-sqs poller (the mail-sync queue's) made a function
 * first loaded after another instance stopped hang until its timeout (test/e2e/start.test.ts).
 */
class NoBundling {
  constructor(serverless) {
    // serverless-esbuild's function option, should serverless.yml ever set it.
    serverless.configSchemaHandler.defineFunctionProperties(serverless.service.provider.name, {
      properties: { skipEsbuild: { type: 'boolean' } },
    });
  }
}

if (process.env.SWITCHBOARD_PREBUILT_DIR) {
  try {
    const path = require.resolve('serverless-esbuild', { paths: [join(__dirname, '..', '..')] });
    const stand = new Module(path, module);
    stand.filename = path;
    stand.loaded = true;
    stand.exports = NoBundling;
    require.cache[path] = stand;
  } catch {
    // Not installed: osls says so when it gets to it.
  }
}

class PrebuiltBundles {
  constructor(serverless) {
    const dir = process.env.SWITCHBOARD_PREBUILT_DIR;
    if (!dir) return;
    const service = serverless.service;
    for (const name of (process.env.SWITCHBOARD_OWN_QUEUES ?? '').split(',').filter(Boolean)) {
      const fn = service.functions?.[name];
      if (fn) fn.events = (fn.events ?? []).filter((event) => !event.sqs);
    }
    service.custom = service.custom ?? {};
    service.custom['serverless-offline'] = { ...(service.custom['serverless-offline'] ?? {}), location: dir };
    this.hooks = {};
  }
}

module.exports = PrebuiltBundles;
