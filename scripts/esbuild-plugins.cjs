'use strict';
/**
 * esbuild plugins for the function bundles (serverless.yml → custom.esbuild.plugins; the bench's
 * SDK reference bundle uses the same list).
 *
 * without-event-streams: the AWS SDK loads its event-stream codec with a dynamic
 * `import("@smithy/core/event-streams")`, needed only by streaming operations (S3 SelectObjectContent,
 * Bedrock, Transcribe…). Switchboard calls none of them, yet a single-file bundle would inline the
 * codec (~15 KB minified) into every function. The import resolves instead to a module that throws
 * a clear error if a streaming operation is ever added without revisiting this choice.
 */
const withoutEventStreams = {
  name: 'without-event-streams',
  setup(build) {
    build.onResolve({ filter: /^@smithy\/core\/event-streams$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, namespace: 'without-event-streams' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'without-event-streams' }, () => ({
      contents:
        "throw new Error('AWS SDK event streams are not bundled in Switchboard functions (scripts/esbuild-plugins.cjs)');",
      loader: 'js',
    }));
  },
};

module.exports = [withoutEventStreams];
