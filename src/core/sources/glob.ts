/** Minimal glob matching for path and symbol patterns: `**`, `*`, `?`, `{a,b}`. */

export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        i++;
        if (glob[i + 1] === '/') {
          i++;
          re += '(?:.*/)?';
        } else {
          re += '.*';
        }
      } else {
        re += '[^/]*';
      }
    } else if (c === '?') {
      re += '[^/]';
    } else if (c === '{') {
      const close = glob.indexOf('}', i);
      if (close < 0) {
        re += '\\{';
        continue;
      }
      re += `(?:${glob
        .slice(i + 1, close)
        .split(',')
        .map(escape)
        .join('|')})`;
      i = close;
    } else {
      re += escape(c);
    }
  }
  return new RegExp(`^${re}$`);
}

function escape(s: string): string {
  return s.replace(/[.+^$()|[\]\\]/g, '\\$&');
}

export function makeMatcher(patterns: string[] | undefined): ((value: string) => boolean) | undefined {
  if (!patterns || patterns.length === 0) return undefined;
  const res = patterns.map(globToRegExp);
  return (value) => res.some((r) => r.test(value));
}
