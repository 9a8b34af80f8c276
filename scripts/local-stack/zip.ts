import { readFileSync, writeFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';

/**
 * Writes a copy of the zip (jar) `source` to `target` with some files replaced or added, every other
 * entry copied byte for byte (headers, compressed data, descriptors): a 10 MB jar takes milliseconds,
 * where the JDK's `jar --update` starts a JVM and recompresses it (over a second of CPU). New files
 * are stored uncompressed. Zip64 archives (over 65,535 entries or 4 GB) are refused. Without a
 * source, the zip holds just `files`.
 */
export function rewriteZip(source: string | undefined, target: string, files: Record<string, Buffer>): void {
  const zip = source === undefined ? EMPTY_ZIP : readFileSync(source);
  const end = zip.lastIndexOf(END_SIGNATURE);
  if (end < 0 || end + 22 > zip.length) throw new Error(`${source}: not a zip file`);
  const count = zip.readUInt16LE(end + 10);
  const directorySize = zip.readUInt32LE(end + 12);
  const directoryOffset = zip.readUInt32LE(end + 16);
  if (count === 0xffff || directoryOffset === 0xffffffff)
    throw new Error(`${source}: zip64 archives are not supported`);

  interface Entry {
    name: string;
    /** Its central directory record. */
    record: Buffer;
    offset: number;
  }
  const entries: Entry[] = [];
  for (let at = directoryOffset; at < directoryOffset + directorySize;) {
    if (zip.readUInt32LE(at) !== CENTRAL_SIGNATURE) throw new Error(`${source}: bad central directory`);
    const length = 46 + zip.readUInt16LE(at + 28) + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    const record = zip.subarray(at, at + length);
    entries.push({
      name: record.toString('utf8', 46, 46 + record.readUInt16LE(28)),
      record,
      offset: record.readUInt32LE(42),
    });
    at += length;
  }
  // An entry's bytes run to the next entry's (or to the central directory).
  const starts = [...entries.map((e) => e.offset), directoryOffset].sort((a, b) => a - b);
  const nextStart = (offset: number) => starts[starts.indexOf(offset) + 1]!;

  const parts: Buffer[] = [];
  const directory: Buffer[] = [];
  let written = 0;
  for (const entry of entries) {
    if (entry.name in files) continue;
    const bytes = zip.subarray(entry.offset, nextStart(entry.offset));
    const record = Buffer.from(entry.record);
    record.writeUInt32LE(written, 42);
    parts.push(bytes);
    directory.push(record);
    written += bytes.length;
  }
  for (const [name, data] of Object.entries(files)) {
    const nameBytes = Buffer.from(name, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(LOCAL_SIGNATURE, 0);
    local.writeUInt16LE(10, 4); // version needed: 1.0
    local.writeUInt16LE(0x0800, 6); // names in UTF-8
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(0x21, 12); // 1980-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    const record = Buffer.alloc(46);
    record.writeUInt32LE(CENTRAL_SIGNATURE, 0);
    record.writeUInt16LE(20, 4); // made by: 2.0
    local.copy(record, 6, 4, 30); // version needed … name length, extra length; no comment, attributes 0
    record.writeUInt32LE(written, 42);
    parts.push(local, nameBytes, data);
    directory.push(record, nameBytes);
    written += local.length + nameBytes.length + data.length;
  }
  const directoryBytes = Buffer.concat(directory);
  const trailer = Buffer.alloc(22);
  trailer.writeUInt32LE(END_SIGNATURE_NUMBER, 0);
  const total = entries.filter((e) => !(e.name in files)).length + Object.keys(files).length;
  trailer.writeUInt16LE(total, 8);
  trailer.writeUInt16LE(total, 10);
  trailer.writeUInt32LE(directoryBytes.length, 12);
  trailer.writeUInt32LE(written, 16);
  writeFileSync(target, Buffer.concat([...parts, directoryBytes, trailer]));
}

/** One file of a zip, uncompressed (stored or deflated entries). */
export function readZipEntry(source: string, name: string): Buffer | undefined {
  const zip = readFileSync(source);
  const end = zip.lastIndexOf(END_SIGNATURE);
  const directorySize = zip.readUInt32LE(end + 12);
  const directoryOffset = zip.readUInt32LE(end + 16);
  for (let at = directoryOffset; at < directoryOffset + directorySize;) {
    const nameLength = zip.readUInt16LE(at + 28);
    const length = 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) === name) {
      const method = zip.readUInt16LE(at + 10);
      const size = zip.readUInt32LE(at + 20);
      const local = zip.readUInt32LE(at + 42);
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + size);
      if (method === 0) return Buffer.from(data);
      if (method === 8) return inflateRawSync(data);
      throw new Error(`${source}: ${name} uses compression method ${method}`);
    }
    at += length;
  }
  return undefined;
}

const LOCAL_SIGNATURE = 0x04034b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const END_SIGNATURE_NUMBER = 0x06054b50;
const END_SIGNATURE = Buffer.from([0x50, 0x4b, 0x05, 0x06]);
/** A zip with nothing in it: its end record alone. */
const EMPTY_ZIP = Buffer.concat([END_SIGNATURE, Buffer.alloc(18)]);

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(data: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
