import { createTransport } from 'nodemailer';

/** Reads what the local SMTP sink relayed "outside" (the sink the local stack runs). */
export interface SunkMessage {
  id: string;
  mailFrom: string;
  recipients: string[];
  receivedAt: string;
  subject: string | null;
  size: number;
}

const sinkUrl = () => process.env.SMTP_SINK_URL!;

export async function sunkMessages(to?: string): Promise<SunkMessage[]> {
  const response = await fetch(`${sinkUrl()}/messages${to ? `?to=${encodeURIComponent(to)}` : ''}`);
  return (await response.json()) as SunkMessage[];
}

export async function sunkRaw(id: string): Promise<string> {
  return (await fetch(`${sinkUrl()}/messages/${id}/raw`)).text();
}

/** Polls the sink until a message for `to` arrived. */
export async function waitForSunk(to: string, timeoutMs = 5000): Promise<SunkMessage[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await sunkMessages(to);
    if (found.length || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A real SMTP client session against an SMTP server on loopback. */
export function smtpClient(port: number) {
  return createTransport({ host: '127.0.0.1', port, secure: false, ignoreTLS: true });
}

/**
 * The inbound SMTP listener `npm start` runs, on a free loopback port, backed by the same ingest as
 * SES inbound. Start it once the test file's environment is set (ingest reads its configuration on load).
 */
export async function startInboundListener(): Promise<{ port: number; stop(): Promise<void> }> {
  const [{ acceptsRecipient, ingestMessage }, { startInboundSmtp }, { freePort }] = await Promise.all([
    import('#shared/agent/ingest'),
    import('../../scripts/local-stack/smtp-inbound'),
    import('../../scripts/local-stack/index'),
  ]);
  const port = await freePort();
  const smtp = await startInboundSmtp({
    port,
    handlers: { acceptsRecipient, deliver: async (raw, envelope) => void (await ingestMessage(raw, envelope)) },
  });
  return { port, stop: smtp.stop };
}
