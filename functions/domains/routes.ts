import {
  CreateDomainBody,
  DomainListQuery,
  DomainObject,
  DomainRecordTypeBody,
  DomainVerificationObject,
  UpdateDomainBody,
} from '#schemas/domains';
import type { RouteTable } from '#shared/http/route';

/**
 * The calling application's email domains: registered, described, proven by DNS records. Only the
 * caller's own domains are found (404 for any other).
 */
export const routes = {
  createDomain: {
    method: 'POST',
    path: '/v3/admin/domains',
    summary: 'Register an email domain of the application (then publish its DNS records and verify them)',
    body: CreateDomainBody,
    response: DomainObject,
  },
  listDomains: {
    method: 'GET',
    path: '/v3/admin/domains',
    summary: "The application's domains, newest first",
    query: DomainListQuery,
    response: DomainObject,
    responseKind: 'list',
  },
  getDomain: {
    method: 'GET',
    path: '/v3/admin/domains/{domain_id}',
    summary: 'One domain and which of its records are verified',
    response: DomainObject,
  },
  updateDomain: {
    method: 'PUT',
    path: '/v3/admin/domains/{domain_id}',
    summary: "Change a domain's label (its address cannot change)",
    body: UpdateDomainBody,
    response: DomainObject,
  },
  deleteDomain: {
    method: 'DELETE',
    path: '/v3/admin/domains/{domain_id}',
    summary: 'Delete a domain; a verified name is released for other applications',
    responseKind: 'empty',
  },
  getDomainInfo: {
    method: 'POST',
    path: '/v3/admin/domains/{domain_id}/info',
    summary: 'The DNS record of one type (ownership, mx, spf, dkim, feedback) to publish, and its verification status',
    body: DomainRecordTypeBody,
    response: DomainVerificationObject,
  },
  verifyDomain: {
    method: 'POST',
    path: '/v3/admin/domains/{domain_id}/verify',
    summary: "Read one record type through the deployment's DNS resolver and say whether it is published as required",
    body: DomainRecordTypeBody,
    response: DomainVerificationObject,
  },
} as const satisfies RouteTable;
