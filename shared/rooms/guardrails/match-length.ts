/**
 * The longest text a pattern (JavaScript syntax, as `linear-regex.ts` reads it) can match, or `Infinity`.
 *
 * Why: a streaming answer under `buffer` holds back as many characters as the longest match any enabled detector can
 * make, so a value split across chunks is never released half-seen; a custom pattern whose matches have no bound
 * (`*`, `+`, `{n,}`) would make that hold-back the whole answer, so such a policy is `invalid` naming the pattern.
 * re2js exposes no syntax tree, and no maintained package computes this bound; the walk below reads the syntax
 * `linear-regex.ts` accepts (escapes, classes, groups, alternation, quantifiers) and counts UTF-16 units, the unit
 * streamed text is held back in. A character that may lie outside the BMP (`.`, a negated class or escape) counts 2. The property test in
 * `test/unit/rooms/guardrails/match-length.test.ts` holds every match the engine makes to the bound.
 */

export function maxMatchLength(source: string): number {
  return new Walk(source).alternation();
}

class Walk {
  i = 0;
  constructor(readonly s: string) {}

  alternation(): number {
    let best = this.sequence();
    while (this.s[this.i] === '|') {
      this.i++;
      best = Math.max(best, this.sequence());
    }
    return best;
  }

  sequence(): number {
    let total = 0;
    while (this.i < this.s.length && this.s[this.i] !== '|' && this.s[this.i] !== ')') {
      const atom = this.atom();
      const times = this.quantifier();
      total += times === 0 ? 0 : atom * times;
      if (!Number.isFinite(total)) total = Number.POSITIVE_INFINITY;
    }
    return total;
  }

  atom(): number {
    const c = this.s[this.i] as string;
    if (c === '(') {
      this.i++;
      if (this.s[this.i] === '?') {
        // (?:…), (?<name>…), (?i:…) and the like: skip to the group's body.
        this.i++;
        if (this.s[this.i] === '<' && this.s[this.i + 1] !== '=' && this.s[this.i + 1] !== '!') {
          while (this.i < this.s.length && this.s[this.i] !== '>') this.i++;
          this.i++;
        } else {
          while (this.i < this.s.length && this.s[this.i] !== ':' && this.s[this.i] !== ')') this.i++;
          if (this.s[this.i] === ':') this.i++;
        }
      }
      const inner = this.alternation();
      if (this.s[this.i] === ')') this.i++;
      return inner;
    }
    if (c === '[') {
      // A class of BMP characters matches one UTF-16 unit; a negated one, or one naming code points beyond the BMP
      // or a property, may match a surrogate pair.
      this.i++;
      let wide = false;
      if (this.s[this.i] === '^') {
        wide = true;
        this.i++;
      }
      if (this.s[this.i] === ']') this.i++;
      while (this.i < this.s.length && this.s[this.i] !== ']') {
        if (this.s[this.i] === '\\') {
          const escaped = this.s[this.i + 1] ?? '';
          if ('pPDWS'.includes(escaped) || (escaped === 'u' && this.s[this.i + 2] === '{')) wide = true;
          this.i++;
        } else if ((this.s.codePointAt(this.i) ?? 0) > 0xffff) wide = true;
        this.i++;
      }
      this.i++;
      return wide ? 2 : 1;
    }
    if (c === '\\') {
      const next = this.s[this.i + 1] ?? '';
      this.i += 2;
      if ('bB'.includes(next)) return 0;
      if (next === 'u' && this.s[this.i] === '{') {
        while (this.i < this.s.length && this.s[this.i] !== '}') this.i++;
        this.i++;
        return 2;
      }
      if (next === 'u') this.i += 4;
      else if (next === 'x') this.i += 2;
      else if (next === 'p' || next === 'P') {
        if (this.s[this.i] === '{') {
          while (this.i < this.s.length && this.s[this.i] !== '}') this.i++;
          this.i++;
        }
        return 2;
      }
      // \d, \w and \s are BMP sets (JavaScript's); their negations may match a surrogate pair.
      return 'DWS'.includes(next) ? 2 : 1;
    }
    this.i++;
    if (c === '^' || c === '$') return 0;
    if (c === '.') return 2;
    return 1;
  }

  quantifier(): number {
    const c = this.s[this.i];
    let times = 1;
    if (c === '*' || c === '+') {
      this.i++;
      times = Number.POSITIVE_INFINITY;
    } else if (c === '?') {
      this.i++;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.s.slice(this.i));
      if (m === null) return 1;
      this.i += m[0].length;
      times = m[2] === undefined ? Number(m[1]) : m[3] === '' ? Number.POSITIVE_INFINITY : Number(m[3]);
    } else {
      return 1;
    }
    if (this.s[this.i] === '?') this.i++; // lazy
    return times;
  }
}
