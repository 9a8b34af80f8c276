/**
 * A file sent in a multipart request (message and draft attachments): what the HTTP layer parses
 * and the mail code stores. Here rather than in shared/http so that mail code needs nothing of HTTP.
 */
export interface UploadedFile {
  /** The form field it came in (`file`, `file0`…). */
  fieldname: string;
  filename: string;
  contentType: string;
  content: Buffer;
}
