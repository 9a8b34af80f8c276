import type { RouteSpec } from '#shared/http/route';
import { routes as applications } from './applications/routes';
import { routes as attachments } from './attachments/routes';
import { routes as availability } from './availability/routes';
import { routes as calendars } from './calendars/routes';
import { routes as contacts } from './contacts/routes';
import { routes as events } from './events/routes';
import { routes as connect } from './connect/routes';
import { routes as connectors } from './connectors/routes';
import { routes as domains } from './domains/routes';
import { routes as domainsSend } from './domains-send/routes';
import { routes as drafts } from './drafts/routes';
import { routes as draftsSend } from './drafts-send/routes';
import { routes as folders } from './folders/routes';
import { routes as governance } from './governance/routes';
import { routes as grants } from './grants/routes';
import { routes as messages } from './messages/routes';
import { routes as messagesClean } from './messages-clean/routes';
import { routes as push } from './push/routes';
import { routes as resources } from './resources/routes';
import { routes as scheduling } from './scheduling/routes';
import { routes as schedulingConfigurations } from './scheduling-configurations/routes';
import { routes as schedulingPages } from './scheduling-pages/routes';
import { routes as send } from './send/routes';
import { routes as schedules } from './schedules/routes';
import { routes as templates } from './templates/routes';
import { routes as threads } from './threads/routes';
import { routes as tracking } from './tracking/routes';
import { routes as webhooks } from './webhooks/routes';

/**
 * Every HTTP route of the API, by endpoint group (function name in serverless.yml). Data only: the
 * `$default` function, the OpenAPI generator and the infrastructure generator (scripts/infra/generate.ts) read it.
 */
export const API_ROUTES = {
  connect,
  grants,
  messages,
  'messages-clean': messagesClean,
  send,
  schedules,
  threads,
  folders,
  drafts,
  'drafts-send': draftsSend,
  templates,
  attachments,
  webhooks,
  governance,
  calendars,
  events,
  resources,
  contacts,
  availability,
  'scheduling-configurations': schedulingConfigurations,
  scheduling,
  'scheduling-pages': schedulingPages,
  applications,
  domains,
  'domains-send': domainsSend,
  connectors,
  push,
  tracking,
} as const;

export const ALL_ROUTES: readonly RouteSpec[] = Object.values(API_ROUTES).flatMap((group) => Object.values(group));
