import {
  ConfigurationObject,
  CreateAppConfigurationBody,
  CreateConfigurationBody,
  ListConfigurationsQuery,
  UpdateConfigurationBody,
} from '#schemas/scheduling';
import { PageQuery } from '#schemas/common';
import type { RouteTable } from '#shared/http/route';

/**
 * The scheduler's configurations (API key): a function of their own, apart from functions/scheduling,
 * because their validators and checks are the bulk of the scheduler's schemas, and they never run the
 * availability, booking, email and booking page code (nor its calendar and time zone libraries).
 */
export const routes = {
  listGrantConfigurations: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/scheduling/configurations',
    summary: "The grant's scheduler configurations",
    query: PageQuery,
    response: ConfigurationObject,
    responseKind: 'list',
    tag: 'scheduling',
  },
  createGrantConfiguration: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/scheduling/configurations',
    summary: 'Create a configuration organized by the grant',
    body: CreateConfigurationBody,
    response: ConfigurationObject,
    status: 201,
    tag: 'scheduling',
  },
  getGrantConfiguration: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/scheduling/configurations/{configuration_id}',
    summary: 'One configuration',
    response: ConfigurationObject,
    tag: 'scheduling',
  },
  updateGrantConfiguration: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/scheduling/configurations/{configuration_id}',
    summary: 'Change a configuration',
    body: UpdateConfigurationBody,
    response: ConfigurationObject,
    tag: 'scheduling',
  },
  deleteGrantConfiguration: {
    method: 'DELETE',
    path: '/v3/grants/{grant_id}/scheduling/configurations/{configuration_id}',
    summary: 'Delete a configuration',
    responseKind: 'empty',
    tag: 'scheduling',
  },
  listConfigurations: {
    method: 'GET',
    path: '/v3/scheduling/configurations',
    summary: "The application's configurations (optionally one grant's)",
    query: ListConfigurationsQuery,
    response: ConfigurationObject,
    responseKind: 'list',
    tag: 'scheduling',
  },
  createConfiguration: {
    method: 'POST',
    path: '/v3/scheduling/configurations',
    summary: 'Create a configuration, its organizer named by grant_id',
    body: CreateAppConfigurationBody,
    response: ConfigurationObject,
    status: 201,
    tag: 'scheduling',
  },
  getConfiguration: {
    method: 'GET',
    path: '/v3/scheduling/configurations/{configuration_id}',
    summary: 'One configuration',
    response: ConfigurationObject,
    tag: 'scheduling',
  },
  updateConfiguration: {
    method: 'PUT',
    path: '/v3/scheduling/configurations/{configuration_id}',
    summary: 'Change a configuration',
    body: UpdateConfigurationBody,
    response: ConfigurationObject,
    tag: 'scheduling',
  },
  deleteConfiguration: {
    method: 'DELETE',
    path: '/v3/scheduling/configurations/{configuration_id}',
    summary: 'Delete a configuration',
    responseKind: 'empty',
    tag: 'scheduling',
  },
} as const satisfies RouteTable;
