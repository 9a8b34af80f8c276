import type { FromSchema } from 'json-schema-to-ts';
import { Limit, PageToken, Select } from '#schemas/common';

/**
 * Contacts and contact groups of a grant. Field names and shapes follow the published contract;
 * array fields answer `[]` when empty (the contract allows null; clients treat both alike).
 */
const text = (maxLength: number) => ({ type: 'string', maxLength }) as const;
const entries = <T extends object>(items: T) => ({ type: 'array', maxItems: 50, items }) as const;
const AddressType = { type: 'string', enum: ['work', 'home', 'other'] } as const;

export const CONTACT_SOURCES = ['address_book', 'inbox', 'domain'] as const;

const ContactEmail = {
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: {
    email: { type: 'string', minLength: 3, maxLength: 255, pattern: '^[^@\\s]+@[^@\\s]+$' },
    type: AddressType,
  },
} as const;
const ContactPhone = {
  type: 'object',
  additionalProperties: false,
  required: ['number'],
  properties: {
    number: { type: 'string', minLength: 1, maxLength: 64 },
    type: { type: 'string', enum: ['work', 'home', 'mobile', 'other'] },
  },
} as const;
const ContactAddress = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: AddressType,
    street_address: text(512),
    city: text(256),
    state: text(256),
    postal_code: text(64),
    country: text(256),
  },
} as const;
const ContactIm = {
  type: 'object',
  additionalProperties: false,
  required: ['im_address'],
  properties: { im_address: { type: 'string', minLength: 1, maxLength: 255 }, type: text(64) },
} as const;
const ContactWebPage = {
  type: 'object',
  additionalProperties: false,
  required: ['url'],
  properties: { url: { type: 'string', minLength: 1, maxLength: 2048 }, type: AddressType },
} as const;
/** A group by ID; clients that send whole group objects (the SDKs do) have their other fields ignored. */
const GroupRef = {
  type: 'object',
  required: ['id'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 256 },
    object: { type: 'string', enum: ['contact_group'] },
    grant_id: text(256),
    group_type: text(16),
    name: text(256),
    path: text(4096),
  },
} as const;

const ContactFields = {
  given_name: text(256),
  middle_name: text(256),
  surname: text(256),
  suffix: text(64),
  nickname: text(256),
  birthday: {
    type: 'string',
    pattern: '^(\\d{4}|-)-\\d{2}-\\d{2}$',
    description: 'YYYY-MM-DD, or --MM-DD without a year.',
  },
  company_name: text(256),
  job_title: text(256),
  manager_name: text(256),
  office_location: text(256),
  notes: text(10_000),
  picture_url: text(2048),
  emails: entries(ContactEmail),
  phone_numbers: entries(ContactPhone),
  physical_addresses: entries(ContactAddress),
  im_addresses: entries(ContactIm),
  web_pages: entries(ContactWebPage),
  groups: entries(GroupRef),
} as const;

export const ContactObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'grant_id',
    'source',
    'emails',
    'phone_numbers',
    'physical_addresses',
    'im_addresses',
    'web_pages',
    'groups',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['contact'] },
    grant_id: { type: 'string' },
    source: { type: 'string', enum: CONTACT_SOURCES },
    ...ContactFields,
    picture: {
      type: 'string',
      description: 'The picture, base64 (with profile_picture=true, when the contact has one).',
    },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

/**
 * A new contact. The contract marks `given_name` required; a contact known only by its address or
 * company is common, so any one name, company, email or phone number is enough (400 otherwise).
 */
export const CreateContactBody = { type: 'object', additionalProperties: false, properties: ContactFields } as const;
export type CreateContactBody = FromSchema<typeof CreateContactBody>;
/** A change: fields sent replace the stored ones (arrays whole); fields left out are kept. */
export const UpdateContactBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: ContactFields,
} as const;
export type UpdateContactBody = FromSchema<typeof UpdateContactBody>;

export const ListContactsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: Limit,
    page_token: PageToken,
    email: { type: 'string', minLength: 1, maxLength: 255 },
    phone_number: { type: 'string', minLength: 1, maxLength: 64 },
    source: { type: 'string', enum: CONTACT_SOURCES, description: 'Default address_book.' },
    group: { type: 'string', minLength: 1, maxLength: 256 },
    recurse: { type: 'boolean', description: 'With group: contacts of its subgroups too.' },
    select: Select,
  },
} as const;
export type ListContactsQuery = FromSchema<typeof ListContactsQuery>;

export const GetContactQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { profile_picture: { type: 'boolean' }, select: Select },
} as const;
export type GetContactQuery = FromSchema<typeof GetContactQuery>;

export const ContactGroupObject = {
  type: 'object',
  required: ['id', 'object', 'grant_id', 'name', 'group_type', 'path'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['contact_group'] },
    grant_id: { type: 'string' },
    name: { type: 'string' },
    group_type: { type: 'string', enum: ['system', 'user', 'other'] },
    path: { type: 'string', description: 'Names from the top group down, joined by "/".' },
  },
} as const;

const GroupName = {
  type: 'string',
  minLength: 1,
  maxLength: 256,
  pattern: '^[^/]*[^/\\s][^/]*$',
  description: 'A name without "/".',
} as const;
/** Groups are created here (the contract lists them only): a name, and optionally the group it sits in. */
export const CreateContactGroupBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: GroupName, parent_id: { type: 'string', minLength: 1, maxLength: 256 } },
} as const;
export type CreateContactGroupBody = FromSchema<typeof CreateContactGroupBody>;
export const UpdateContactGroupBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: GroupName },
} as const;
export type UpdateContactGroupBody = FromSchema<typeof UpdateContactGroupBody>;
