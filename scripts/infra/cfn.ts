import type { Scalar, ScalarTag } from 'yaml';
import { stringifyString } from 'yaml/util';

/**
 * CloudFormation intrinsics as values the generator can compare and render: written to
 * serverless.yml as the short tags (`!Ref Table`, `!GetAtt Table.Arn`, `!Sub '…'`) that
 * scripts/local-stack/serverless-config.ts reads back as `{ Ref }`, `{ 'Fn::GetAtt': [...] }`, `{ 'Fn::Sub' }`.
 */
export class Intrinsic {
  constructor(
    readonly name: 'Ref' | 'GetAtt' | 'Sub',
    readonly value: string,
  ) {}

  /** A stable text for comparing and sorting resources. */
  toString(): string {
    return `!${this.name} ${this.value}`;
  }
}

export const ref = (logicalId: string) => new Intrinsic('Ref', logicalId);
export const getAtt = (attribute: string) => new Intrinsic('GetAtt', attribute);
export const sub = (template: string) => new Intrinsic('Sub', template);

/** yaml's tags that write an Intrinsic as its short form. */
export const INTRINSIC_TAGS: ScalarTag[] = (['Ref', 'GetAtt', 'Sub'] as const).map((name) => ({
  tag: `!${name}`,
  identify: (value: unknown) => value instanceof Intrinsic && value.name === name,
  resolve: (value: string) => new Intrinsic(name, value),
  stringify: (item, ctx, onComment, onChompKeep) =>
    stringifyString({ value: ((item as Scalar).value as Intrinsic).value } as Scalar, ctx, onComment, onChompKeep),
}));
