/**
 * Turns the bytes of a .py file into text the way CPython would (PEP 263 / PEP 3120), or says why not.
 */

export type DecodeResult = { ok: true; text: string; encoding: string } | { ok: false; reason: 'binary' | 'encoding'; detail: string };

const CODING_RE = /^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)/;

/** The encoding that a PEP 263 line in the first two lines declares, if any. */
export function declaredEncoding(bytes: Uint8Array): string | undefined {
  const head = Buffer.from(bytes.subarray(0, Math.min(bytes.length, 400))).toString('latin1');
  const lines = head.split(/\r?\n|\r/, 2);
  for (let i = 0; i < lines.length; i++) {
    const m = CODING_RE.exec(lines[i]);
    if (m) {
      return m[1].toLowerCase();
    }
    // the second line counts only when the first is blank or a comment
    if (i === 0 && !/^[ \t\f]*(#.*)?$/.test(lines[0])) {
      break;
    }
  }
  return undefined;
}

function normaliseEncoding(name: string): string {
  const n = name.replace(/_/g, '-');
  if (/^(latin-?1|iso-?8859-?1|l1)$/.test(n)) return 'latin1';
  if (/^utf-?8(-sig)?$/.test(n)) return 'utf-8';
  if (/^(ascii|us-ascii)$/.test(n)) return 'utf-8';
  return n;
}

/** Decodes Python source bytes; rejects binary data and text that does not match its declared encoding. */
export function decodePython(bytes: Uint8Array): DecodeResult {
  const probe = bytes.subarray(0, Math.min(bytes.length, 8192));
  if (probe.includes(0)) {
    return { ok: false, reason: 'binary', detail: 'contains NUL bytes' };
  }
  let start = 0;
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    start = 3;
  }
  const declared = declaredEncoding(bytes);
  const encoding = declared ? normaliseEncoding(declared) : 'utf-8';
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(encoding, { fatal: true });
  } catch {
    return { ok: false, reason: 'encoding', detail: `unknown encoding '${declared}'` };
  }
  try {
    return { ok: true, text: decoder.decode(bytes.subarray(start)), encoding };
  } catch {
    return {
      ok: false,
      reason: declared ? 'encoding' : 'binary',
      detail: declared ? `not valid ${declared}` : 'not valid UTF-8 and no coding line',
    };
  }
}
