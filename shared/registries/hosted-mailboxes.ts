import { agentHostedMailboxes } from '#shared/agent/hosted-mailboxes';
import type { HostedMailboxes } from '#shared/providers/contract';

/** The provider whose grants are the mailboxes this deployment hosts (local delivery, inbound mail): Agent Accounts. */
export const hostedMailboxes: HostedMailboxes = agentHostedMailboxes;
