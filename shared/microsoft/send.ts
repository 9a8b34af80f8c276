import { liveScheduledSending, liveSend, type LiveSubmission } from '#shared/mailbox/live-send';
import { graphMessages } from '#shared/microsoft/messages';
import { repliedOnGraph, sendThroughGraph } from '#shared/microsoft/submit';

/**
 * Sending from provider B, live (shared/mailbox/live-send.ts): the message composed as every
 * provider's is, handed to Graph as MIME (shared/microsoft/submit.ts: sendMail, or a draft with its
 * attachments uploaded when it is over Graph's 4 MB), which delivers it and keeps the Sent copy; the
 * answer is that copy as Graph holds it, found by its Message-ID in Sent Items. A reply carries the
 * answered message's Message-ID and References, read from Graph.
 */
const graph: LiveSubmission = {
  submit: sendThroughGraph,
  replied: repliedOnGraph,
  read: (grant, messageId) => graphMessages.get(grant, messageId, {}),
};

/** A due scheduled message of a microsoft grant, sent through Graph. */
export const graphScheduledSending = /* @__PURE__ */ liveScheduledSending(graph);

/** POST .../messages/send for microsoft grants; `send_at` is scheduled as every provider's is (without a draft). */
export const graphSend = /* @__PURE__ */ liveSend(graph, 'microsoft');

/** Mail the API sends for the account: in submit.ts, so that the jobs worker's bundle leaves the template engines out. */
export { graphAccountMail } from '#shared/microsoft/submit';
