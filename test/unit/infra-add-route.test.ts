import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { differences, summarize } from '../../scripts/infra/compare';
import { ROOT, parseServerlessConfig } from '../../scripts/local-stack/serverless-config';

/**
 * Adding an endpoint touches its route and its handler only: in a copy of the sources, one more
 * route in the attachments function's route table, handled by code that deletes an item (a
 * DynamoDB call that function never made), then `npm run generate` and `npm run generate:infra` as
 * a developer would run them. The regenerated serverless.yml differs from the one generated before
 * the edit by exactly that route's httpApi event on that function and BatchWriteItem on its role.
 */
const copy = mkdtempSync(join(tmpdir(), 'infra-add-route-'));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

for (const entry of ['functions', 'shared', 'schemas', 'scripts', 'package.json', 'tsconfig.json'])
  cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');

const run = (script: string) =>
  execFileSync('sh', ['scripts/node24.sh', 'tsx', script], { cwd: copy, stdio: 'pipe', encoding: 'utf8' });
const generate = () => {
  run('scripts/generate-routes.ts');
  run('scripts/infra/generate.ts');
  return summarize(parseServerlessConfig(readFileSync(join(copy, 'serverless.yml'), 'utf8')));
};

/** Inserts `text` before the last occurrence of `marker` in a file of the copy. */
function insertBefore(file: string, marker: string, text: string): void {
  const path = join(copy, file);
  const source = readFileSync(path, 'utf8');
  const at = source.lastIndexOf(marker);
  if (at < 0) throw new Error(`${file}: no ${marker}`);
  writeFileSync(path, source.slice(0, at) + text + source.slice(at));
}

describe('adding an endpoint', () => {
  it(
    "adds its route to the function's events and the permission its call needs to the function's role, and nothing else",
    { timeout: 180_000 },
    () => {
      const before = generate();
      expect(
        before.permissions.AttachmentsFunctionRole!.some((grant) => grant.includes('dynamodb:BatchWriteItem')),
        'the new call must need a new permission',
      ).toBe(false);

      insertBefore(
        'functions/attachments/routes.ts',
        '} as const satisfies RouteTable;',
        "  forgetAttachment: { method: 'DELETE', path: '/v3/grants/{grant_id}/attachments/{attachment_id}', summary: 'Forget an attachment', responseKind: 'empty' },\n",
      );
      insertBefore(
        'functions/attachments/handler.ts',
        "import { binary, ok, redirect } from '#shared/http/route';",
        "import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';\nimport { dynamo, TABLE_NAME } from '#shared/aws/dynamodb';\n",
      );
      insertBefore(
        'functions/attachments/handler.ts',
        '});',
        '  forgetAttachment: async ({ grant, params }) => {\n' +
          '    await dynamo.send(new BatchWriteCommand({ RequestItems: { [TABLE_NAME]: [{ DeleteRequest: { Key: { pk: `GRANT#${grant.id}`, sk: `ATTACHMENT#${params.attachment_id}` } } }] } }));\n' +
          "    return { kind: 'empty' as const };\n" +
          '  },\n',
      );
      const after = generate();

      expect(differences(before, after)).toEqual({
        added: [
          'function attachments event {"httpApi":"DELETE /v3/grants/{grant_id}/attachments/{attachment_id}"}',
          'permission AttachmentsFunctionRole Allow dynamodb:BatchWriteItem {"Fn::GetAtt":["Table","Arn"]}',
        ],
        removed: [],
      });
    },
  );
});
