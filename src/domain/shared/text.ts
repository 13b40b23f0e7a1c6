// Text that arrives from outside a request's JSON (a receiver's answer, a cell of an uploaded
// CSV) is stored as it came, but for NUL: PostgreSQL's text refuses U+0000, so the statement
// that stores it fails (and whatever it belonged to with it). It becomes U+FFFD on both engines,
// as invalid UTF-8 does when the bytes are decoded. Request bodies are refused instead (400).

export const withoutNul = (text: string): string => text.replaceAll('\0', '\uFFFD');
