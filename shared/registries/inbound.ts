import { deleteBlobs, getBlob } from '#shared/aws/mail-bucket';
import { IngestRefusedError, ingestMessage, type IngestResult } from '#shared/agent/ingest';

/**
 * Mail received from the internet (SES on AWS, the SMTP listener locally) is for the mailboxes this
 * deployment hosts, so the provider that hosts them takes it: Agent Accounts. Connected providers
 * receive their mail at their own servers and reach us by sync.
 */
export interface InboundMail {
  /** A message SES staged in the mail bucket. */
  staged(key: string): Promise<Buffer>;
  /** Removes staged messages once stored (or refused). */
  removeStaged(keys: string[]): Promise<void>;
  /** Stores a message for its recipients; throws `Refused` when every recipient's policy refuses it. */
  ingest(raw: Buffer, envelope: { mailFrom: string; recipients: string[] }): Promise<IngestResult>;
  /** The error `ingest` throws for a message refused by policy (its SMTP reply is its message). */
  Refused: typeof IngestRefusedError;
}

export const inboundMail: InboundMail = {
  staged: getBlob,
  removeStaged: deleteBlobs,
  ingest: ingestMessage,
  Refused: IngestRefusedError,
};
