/** Text from data (an index's rows, indexed code, an interpreter's metadata) made safe for one line of a file. */

/** Characters that end a line for Python or for some tool that reads the file, and the other control characters. */
// eslint-disable-next-line no-control-regex
const LINE_ENDING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** Whether `value` holds a character that could end a line, or another control character. */
export function breaksLine(value: string): boolean {
  LINE_ENDING.lastIndex = 0;
  return LINE_ENDING.test(value);
}

/** `value` with every character that could end a line (or is a control character) written as `\uXXXX`. */
export function oneLine(value: string): string {
  return value.replace(LINE_ENDING, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Text another process or an archive sent, as data: each run of line endings and control characters becomes one
 * space (it prints and renders as one line), at most `max` characters. */
export function plainText(value: string, max: number): string {
  return value.replace(LINE_ENDING, ' ').replace(/ {2,}/g, ' ').slice(0, max);
}

/** A git commit shortened to 12 characters; anything else (a package version, `torchvision==0.14.1`) whole. */
export function shortCommit(commit: string): string {
  return /^[0-9a-f]{40}$/.test(commit) ? commit.slice(0, 12) : commit;
}

/** The first line of a message, cut as `sentence` cuts (what a header keeps of why a validation failed). */
export function firstLine(text: string, max = 300): string {
  return sentence(text.split('\n')[0], max);
}

/** `text` cut to at most `max` characters at a word's end, with an ellipsis when cut, and ending as a sentence does. */
export function sentence(text: string, max: number): string {
  let out = text.trim();
  if (out.length > max) {
    const cut = out.slice(0, max - 1);
    const at = cut.lastIndexOf(' ');
    out = `${(at > max / 2 ? cut.slice(0, at) : cut).replace(/[\s,;:]+$/, '')}…`;
  }
  return /[.!?…)]$/.test(out) ? out : `${out}.`;
}
