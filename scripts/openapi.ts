/** Prints the OpenAPI 3.1 document generated from the route tables: `npm run openapi > openapi.json`. */
import { API_ROUTES } from '#functions/routes';
import { buildOpenApi } from '#schemas/openapi';

process.stdout.write(`${JSON.stringify(buildOpenApi(API_ROUTES), null, 2)}\n`);
