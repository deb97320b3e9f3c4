// The common shape of generated manifests and live exports, read without a general YAML parser:
// block mappings and sequences, one-line quoted scalars, plain scalars (wrapped over lines too),
// `{}` and `[]`, literal block scalars (`|`, `|-`, `|+`) for scripts, and `---` between documents.
// Anything else (comments, anchors, tags, folded or multi-line quoted scalars, flow collections
// with content, a repeated key, odd indentation) returns undefined, and the caller reads the text
// with js-yaml instead, which gives the same values and reports the errors. Reading a large export
// this way does less than js-yaml's general machinery (see the Performance section of
// docs/guard.md). Required only by yaml.ts.

/** A document's value and the 1-based line its content starts on (as yaml.ts reports it). */
export interface BlockDocument {
  readonly value: unknown;
  readonly line: number;
  readonly duplicates: [];
}

// Characters js-yaml refuses in a scalar (loader.js PATTERN_NON_PRINTABLE): a text with any is left to it.
const NON_PRINTABLE =
  // eslint-disable-next-line no-control-regex
  /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:[^\uD800-\uDBFF]|^)[\uDC00-\uDFFF]/;

const SPACE = 32;
const COLON = 58;
const DASH = 45;
const SQUOTE = 39;
const DQUOTE = 34;
const HASH = 35;
const BACKSLASH = 92;
const NL = 10;

/** Escapes of a double-quoted scalar whose meaning JSON and YAML share, and `\\ ` (a space). */
const ESCAPES = new Map<number, string>(
  [
    ['"', '"'],
    ['\\', '\\'],
    ['/', '/'],
    ['b', '\b'],
    ['f', '\f'],
    ['n', '\n'],
    ['r', '\r'],
    ['t', '\t'],
    [' ', ' '],
  ].map(([k, v]) => [k.charCodeAt(0), v]),
);

/** Characters that start something other than a plain scalar (YAML 1.2 c-indicator), `-` aside. */
const INDICATOR = new Set([...'?:,[]{}#&*!|>\'"%@`'].map(c => c.charCodeAt(0)));

/** Thrown inside the reader for anything outside the shape it reads; caught in readBlockDocuments. */
class NotBlock extends Error {}
const NOT_BLOCK = new NotBlock();

/**
 * The documents of `text`, each a block mapping, or undefined when the text has anything this
 * reader leaves to js-yaml. `plain` resolves a plain scalar (null, bool, int, float or string).
 */
export function readBlockDocuments(text: string, plain: (s: string) => unknown): BlockDocument[] | undefined {
  if (text.charCodeAt(0) === 0xfeff || text.includes('\t') || text.includes('\r') || NON_PRINTABLE.test(text))
    return undefined;
  const n = text.length;
  // The current line: its start, the column of its first character, where its content starts
  // (after `- ` inside a sequence item) and ends (trailing spaces excluded), and its 1-based number.
  let start = 0;
  let col = 0;
  let cs = 0;
  let ce = 0;
  let le = 0;
  let lineNo = 0;
  let eof = false;

  /** Moves to the next line that is not blank (from the line starting at `from`). */
  const seek = (from: number): void => {
    let p = from;
    for (;;) {
      if (p >= n) {
        eof = true;
        return;
      }
      lineNo++;
      let e = text.indexOf('\n', p);
      if (e < 0) e = n;
      let c = p;
      while (c < e && text.charCodeAt(c) === SPACE) c++;
      if (c < e) {
        let t = e;
        while (text.charCodeAt(t - 1) === SPACE) t--;
        start = p;
        col = c - p;
        cs = c;
        ce = t;
        le = e;
        return;
      }
      p = e + 1;
    }
  };
  const next = () => seek(le + 1);
  const isMarker = () => col === 0 && ce - cs === 3 && text.startsWith('---', cs);
  const isItem = () => text.charCodeAt(cs) === DASH && (cs + 1 === ce || text.charCodeAt(cs + 1) === SPACE);

  /**
   * A literal block scalar whose header ends the current line, owned by the key or `-` at column
   * `owner`; leaves the current line at the first line after it. As js-yaml reads it
   * (readBlockScalar): the first line sets the indentation, and lines are kept from there on.
   */
  const literal = (owner: number, chomp: number): string => {
    let p = le + 1;
    let indent = -1;
    let out = '';
    let empty = 0;
    let content = false;
    for (;;) {
      if (p >= n) break;
      let e = text.indexOf('\n', p);
      if (e < 0) e = n;
      let c = p;
      const stop = indent < 0 ? e : Math.min(e, p + indent);
      while (c < stop && text.charCodeAt(c) === SPACE) c++;
      if (c === e) {
        // Blank before the first line would set the indentation: left to js-yaml.
        if (indent < 0) throw NOT_BLOCK;
        empty++;
      } else {
        if (indent < 0) {
          // An empty scalar (the next line belongs to the parent) is left to js-yaml.
          if (c - p <= owner) throw NOT_BLOCK;
          indent = c - p;
        } else if (c - p < indent) break;
        out += content ? '\n'.repeat(1 + empty) + text.slice(c, e) : text.slice(c, e);
        content = true;
        empty = 0;
      }
      lineNo++;
      p = e + 1;
    }
    // An empty scalar at the end of the text is js-yaml's too.
    if (!content) throw NOT_BLOCK;
    if (chomp === 43 /* + */) out += '\n'.repeat(1 + empty);
    else if (chomp !== DASH) out += '\n';
    // The line that ended the scalar is read again as the parent's (seek counts it).
    seek(p);
    return out;
  };

  /**
   * A quoted scalar over several lines, as js-yaml's readSingleQuotedScalar and
   * readDoubleQuotedScalar read it: a line break folds to a space (n breaks to n-1 newlines), a
   * line's trailing and the next line's leading spaces go. Single-quoted: `''` is a quote.
   * Double-quoted: `\` at the end of a line joins the lines; escapes as in JSON, plus `\ `.
   */
  const quotedLines = (p: number, owner: number): string => {
    const quote = text.charCodeAt(p);
    const single = quote === SQUOTE;
    let out = '';
    let i = p + 1;
    let from = i;
    let to = i;
    /** Past the line break at `i` and any blank lines, into the next line's content. */
    const breaks = (): number => {
      let count = 0;
      while (text.charCodeAt(i) === NL) {
        count++;
        lineNo++;
        i++;
        const lineStart = i;
        while (text.charCodeAt(i) === SPACE) i++;
        // A continuation at or left of the owner's column (a document marker, say) is js-yaml's.
        if (i < n && text.charCodeAt(i) !== NL && i - lineStart <= owner) throw NOT_BLOCK;
      }
      if (i >= n) throw NOT_BLOCK;
      return count;
    };
    for (;;) {
      if (i >= n) throw NOT_BLOCK;
      const ch = text.charCodeAt(i);
      if (ch === quote) {
        if (single && text.charCodeAt(i + 1) === SQUOTE) {
          out += text.slice(from, i + 1);
          i += 2;
          from = to = i;
          continue;
        }
        out += text.slice(from, i);
        i++;
        break;
      }
      if (ch === BACKSLASH && !single) {
        out += text.slice(from, i);
        const e = text.charCodeAt(i + 1);
        i++;
        if (e === NL) breaks();
        else if (e === 117 /* u */) {
          const hex = text.slice(i + 1, i + 5);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw NOT_BLOCK;
          out += String.fromCharCode(parseInt(hex, 16));
          i += 5;
        } else {
          const esc = ESCAPES.get(e);
          if (esc === undefined) throw NOT_BLOCK;
          out += esc;
          i++;
        }
        from = to = i;
        continue;
      }
      if (ch === NL) {
        out += text.slice(from, to);
        const count = breaks();
        out += count === 1 ? ' ' : '\n'.repeat(count - 1);
        from = to = i;
        continue;
      }
      i++;
      if (ch !== SPACE) to = i;
    }
    let e = text.indexOf('\n', i);
    if (e < 0) e = n;
    for (let k = i; k < e; k++) if (text.charCodeAt(k) !== SPACE) throw NOT_BLOCK;
    seek(e + 1);
    return out;
  };

  /** `v`, the current line read. */
  const done = <T>(v: T): T => {
    next();
    return v;
  };

  /** A scalar from `p` to the end of the line's content: quoted, `{}`, `[]`, a literal block or plain. */
  const scalar = (p: number, owner: number): unknown => {
    const c = text.charCodeAt(p);
    if (c === 124 /* | */) {
      const chomp = ce - p === 1 ? 0 : text.charCodeAt(p + 1);
      if (ce - p > 2 || (chomp !== 0 && chomp !== DASH && chomp !== 43)) throw NOT_BLOCK;
      return literal(owner, chomp);
    }
    if (c === SQUOTE) {
      let j = p + 1;
      let doubled = false;
      for (;;) {
        const q = text.indexOf("'", j);
        if (q < 0 || q >= ce) return quotedLines(p, owner);
        if (text.charCodeAt(q + 1) === SQUOTE && q + 1 < ce) {
          doubled = true;
          j = q + 2;
          continue;
        }
        if (q + 1 !== ce) throw NOT_BLOCK;
        const s = text.slice(p + 1, q);
        return done(doubled ? s.replace(/''/g, "'") : s);
      }
    }
    if (c === DQUOTE) {
      let j = p + 1;
      while (j < ce && text.charCodeAt(j) !== DQUOTE) j += text.charCodeAt(j) === BACKSLASH ? 2 : 1;
      if (j >= ce) return quotedLines(p, owner);
      if (j !== ce - 1) throw NOT_BLOCK;
      const body = text.slice(p + 1, ce - 1);
      if (!body.includes('\\')) {
        if (body.includes('"')) throw NOT_BLOCK;
        return done(body);
      }
      // JSON's escapes mean the same in YAML; any other escape, or a quote that ends the string
      // early, fails JSON.parse and is left to js-yaml.
      try {
        const v = JSON.parse(text.slice(p, ce));
        if (typeof v === 'string') return done(v);
      } catch {
        // not JSON-compatible
      }
      throw NOT_BLOCK;
    }
    if (c === 123 /* { */ || c === 91 /* [ */) {
      if (ce - p === 2 && text.charCodeAt(p + 1) === (c === 123 ? 125 : 93)) return done(c === 123 ? {} : []);
      throw NOT_BLOCK;
    }
    if (INDICATOR.has(c) || (c === DASH && (p + 1 === ce || text.charCodeAt(p + 1) === SPACE))) throw NOT_BLOCK;
    let s = text.slice(p, ce);
    plainLine(s);
    let last = lineNo;
    next();
    // Lines indented past the owner continue the scalar (a long string wrapped by the writer),
    // folded as js-yaml's readPlainScalar folds them: one line break a space, n breaks n-1 newlines.
    while (!eof && col > owner) {
      const t = text.slice(cs, ce);
      if (t.charCodeAt(0) === HASH) throw NOT_BLOCK;
      plainLine(t);
      s += lineNo - last === 1 ? ' ' : '\n'.repeat(lineNo - last - 1);
      s += t;
      last = lineNo;
      next();
    }
    return plain(s);
  };

  /** A line of a plain scalar. */
  const plainLine = (s: string): void => {
    // `a: b`, or a trailing `:`, is a mapping where a scalar stands: an error js-yaml names. A `#`
    // after a space starts a comment (`#` elsewhere is text, as in a URL): left to js-yaml.
    if (s.includes(': ') || s.charCodeAt(s.length - 1) === COLON || s.includes(' #')) throw NOT_BLOCK;
  };

  /** Where the key of a `key: value` or `key:` line ends, or -1. */
  const keyEnd = (): number => {
    let j = cs;
    for (;;) {
      const q = text.indexOf(':', j);
      if (q < 0 || q >= ce) return -1;
      if (q + 1 === ce || text.charCodeAt(q + 1) === SPACE) return q;
      j = q + 1;
    }
  };

  /** A block sequence whose `-` stand at column `at`. */
  const sequence = (at: number): unknown[] => {
    const out: unknown[] = [];
    while (!eof && col === at && isItem()) {
      let p = cs + 1;
      while (p < ce && text.charCodeAt(p) === SPACE) p++;
      if (p === ce) throw NOT_BLOCK;
      const c = text.charCodeAt(p);
      if (c === DASH && (p + 1 === ce || text.charCodeAt(p + 1) === SPACE)) throw NOT_BLOCK;
      cs = p;
      if (c !== SQUOTE && c !== DQUOTE && keyEnd() >= 0) {
        // `- key: value`: a mapping whose keys stand at the column after `- `.
        const itemCol = p - start;
        col = itemCol;
        out.push(mapping(itemCol));
      } else {
        out.push(scalar(p, at));
      }
      if (!eof && col > at && !isMarker()) throw NOT_BLOCK;
    }
    return out;
  };

  /** A block mapping whose keys stand at column `at`; the current line is its first entry. */
  const mapping = (at: number): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    while (!eof && !isMarker()) {
      if (col < at) break;
      if (col > at) throw NOT_BLOCK;
      const c = text.charCodeAt(cs);
      if (INDICATOR.has(c) || c === DASH) throw NOT_BLOCK;
      const k = keyEnd();
      if (k < 0 || text.charCodeAt(k - 1) === SPACE || k - cs > 1024) throw NOT_BLOCK;
      const key = text.slice(cs, k);
      if (key.includes(' #')) throw NOT_BLOCK;
      // A key that YAML 1.1 reads as null, a bool or a number, merge keys and __proto__ are js-yaml's.
      if (plain(key) !== key || key === '<<' || key === '__proto__' || Object.prototype.hasOwnProperty.call(out, key))
        throw NOT_BLOCK;
      let p = k + 1;
      while (p < ce && text.charCodeAt(p) === SPACE) p++;
      if (p < ce) {
        out[key] = scalar(p, at);
        continue;
      }
      next();
      if (eof || isMarker() || col < at || (col === at && !isItem())) out[key] = null;
      else if (isItem()) out[key] = sequence(col);
      else out[key] = mapping(col);
    }
    return out;
  };

  const docs: BlockDocument[] = [];
  try {
    seek(0);
    let first = true;
    while (!eof) {
      if (isMarker()) next();
      else if (!first) throw NOT_BLOCK;
      first = false;
      // An empty document, or one that is not a mapping, is js-yaml's to read.
      if (eof || isMarker() || isItem()) throw NOT_BLOCK;
      const line = lineNo;
      const value = mapping(col);
      if (!eof && !isMarker()) throw NOT_BLOCK;
      docs.push({ value, line, duplicates: [] });
    }
  } catch (e) {
    if (e === NOT_BLOCK) return undefined;
    throw e;
  }
  return docs.length > 0 ? docs : undefined;
}
