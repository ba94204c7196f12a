/**
 * The built-in sensitive-information detectors: a candidate pattern on the linear regex engine
 * (`#shared/domain/lang/linear-regex.ts`, so no text can make a scan slow) and, where the value carries one, its
 * check rule — Luhn for payment cards, ISO 13616 mod 97 for IBANs, the SSA's never-issued ranges for US SSNs, the
 * prefixes HMRC never allocates for National Insurance numbers, ISO 7064 MOD 11,10 and the digit-repetition rule for
 * the German Steuer-IdNr, the holder-type letter of an Indian PAN, octet ranges for IPv4 and `node:net` for IPv6.
 * A candidate that fails its rule is tried shorter (a card followed by more digits, an IBAN followed by a capitalised
 * word), then dropped. `maxLength` is what a streaming `buffer` holds back for the detector (`match-length.ts`).
 */
import { isIPv6 } from 'node:net';
import { LinearRegExp } from '#shared/domain/lang/linear-regex.ts';
import { maxMatchLength } from './match-length.ts';

export const PII_TYPES = [
  'email',
  'phone',
  'card',
  'iban',
  'us_ssn',
  'uk_nino',
  'de_tax_id',
  'in_pan',
  'ip_address',
  'aws_access_key',
  'aws_secret_key',
  'secret',
] as const;
export type PiiType = (typeof PII_TYPES)[number];

export interface Detector {
  readonly type: string;
  readonly pattern: string;
  readonly flags?: string;
  /** The capture group whose text is the value (0: the whole match). */
  readonly group?: number;
  /** Accepts the candidate as it is, or the length of its longest accepted prefix, or nothing. */
  readonly accept?: (candidate: string) => number | undefined;
  /** Whether the characters either side must not be letters or digits (a value inside a longer token is not one). */
  readonly bounded?: boolean;
}

export interface Span {
  readonly type: string;
  readonly start: number;
  readonly end: number;
}

const digitsOf = (s: string) => s.replace(/[^0-9]/g, '');

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}

/** Issuer prefixes of the card schemes (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro). */
const CARD_PREFIX = /^(4|5[1-5]|2[2-7]|3[47]|3[0689]|6|35)/;

function cardAccept(candidate: string): number | undefined {
  return longestPrefix(candidate, (s) => {
    const d = digitsOf(s);
    return d.length >= 13 && d.length <= 19 && CARD_PREFIX.test(d) && luhnValid(d);
  });
}

/** IBAN lengths of the countries most often seen; another country's IBAN is checked by mod 97 alone. */
const IBAN_LENGTHS: Record<string, number> = {
  AT: 20,
  BE: 16,
  CH: 21,
  DE: 22,
  DK: 18,
  ES: 24,
  FI: 18,
  FR: 27,
  GB: 22,
  IE: 22,
  IT: 27,
  LU: 20,
  NL: 18,
  NO: 15,
  PL: 28,
  PT: 25,
  SE: 24,
};

export function ibanValid(compact: string): boolean {
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$/.test(compact)) return false;
  const expected = IBAN_LENGTHS[compact.slice(0, 2)];
  if (expected !== undefined && compact.length !== expected) return false;
  const moved = compact.slice(4) + compact.slice(0, 4);
  let rest = 0;
  for (const ch of moved) {
    const value = ch >= 'A' ? String(ch.charCodeAt(0) - 55) : ch;
    for (const digit of value) rest = (rest * 10 + Number(digit)) % 97;
  }
  return rest === 1;
}

function ibanAccept(candidate: string): number | undefined {
  return longestPrefix(candidate, (s) => ibanValid(s.replace(/ /g, '')));
}

function ssnAccept(candidate: string): number | undefined {
  const [area, group, serial] = candidate.split('-');
  if (area === '000' || area === '666' || area?.startsWith('9')) return undefined;
  if (group === '00' || serial === '0000') return undefined;
  return candidate.length;
}

const NINO_BAD_PREFIXES = new Set(['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ']);

function ninoAccept(candidate: string): number | undefined {
  const prefix = candidate.slice(0, 2);
  if (NINO_BAD_PREFIXES.has(prefix) || prefix[1] === 'O') return undefined;
  return candidate.length;
}

/** The Steuer-IdNr check digit: ISO/IEC 7064 MOD 11,10 over the first ten digits. */
export function deTaxIdCheckDigit(first10: string): number {
  let product = 10;
  for (const ch of first10) {
    let sum = (Number(ch) + product) % 10;
    if (sum === 0) sum = 10;
    product = (sum * 2) % 11;
  }
  const check = 11 - product;
  return check === 10 ? 0 : check;
}

export function deTaxIdValid(id: string): boolean {
  if (!/^[1-9][0-9]{10}$/.test(id)) return false;
  const first10 = id.slice(0, 10);
  // Exactly one digit appears twice or three times in the first ten (never three in a row); the others once at most.
  const counts = new Map<string, number>();
  for (const ch of first10) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  const repeated = [...counts.values()].filter((n) => n > 1);
  if (repeated.length !== 1 || (repeated[0] as number) > 3) return false;
  if (/(\d)\1\1/.test(first10)) return false;
  return deTaxIdCheckDigit(first10) === Number(id[10]);
}

function deTaxIdAccept(candidate: string): number | undefined {
  return deTaxIdValid(candidate.replace(/ /g, '')) ? candidate.length : undefined;
}

function ipv4Accept(candidate: string): number | undefined {
  return candidate.split('.').every((o) => Number(o) <= 255 && !(o.length > 1 && o.startsWith('0')))
    ? candidate.length
    : undefined;
}

function ipv6Accept(candidate: string): number | undefined {
  return longestPrefix(
    candidate,
    (s) => s.includes(':') && (s.split(':').length >= 8 || s.includes('::')) && isIPv6(s),
  );
}

function phoneAccept(candidate: string): number | undefined {
  const d = digitsOf(candidate);
  return d.length >= 8 && d.length <= 15 ? candidate.length : undefined;
}

function emailAccept(candidate: string): number | undefined {
  const tld = candidate.slice(candidate.lastIndexOf('.') + 1);
  return /^[A-Za-z]{2,24}$/.test(tld) && !candidate.startsWith('.') ? candidate.length : undefined;
}

/** The longest prefix of `s` ending in a letter or digit that `ok` accepts (the candidate itself first). */
function longestPrefix(s: string, ok: (prefix: string) => boolean): number | undefined {
  for (let end = s.length; end > 0; end--) {
    if (!/[A-Za-z0-9]/.test(s[end - 1] as string)) continue;
    if (ok(s.slice(0, end))) return end;
  }
  return undefined;
}

export const BUILT_IN_DETECTORS: Readonly<Record<PiiType, readonly Detector[]>> = {
  email: [
    {
      type: 'email',
      // Domain labels of up to 40 characters, at most five: every address people write, and a hold-back of 270.
      pattern: '[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,40}(?:\\.[A-Za-z0-9-]{1,40}){1,4}',
      accept: emailAccept,
      bounded: true,
    },
  ],
  phone: [
    // International (E.164 with separators), North American and UK domestic formats.
    {
      type: 'phone',
      pattern: '\\+[1-9][0-9]{0,3}(?:[ .-]?\\(?[0-9]{1,4}\\)?){2,6}',
      accept: phoneAccept,
      bounded: true,
    },
    { type: 'phone', pattern: '\\([0-9]{3}\\) ?[0-9]{3}[ .-][0-9]{4}', accept: phoneAccept, bounded: true },
    { type: 'phone', pattern: '[0-9]{3}[.-][0-9]{3}[.-][0-9]{4}', accept: phoneAccept, bounded: true },
    { type: 'phone', pattern: '0[0-9]{3,4} ?[0-9]{3} ?[0-9]{3,4}', accept: phoneAccept, bounded: true },
  ],
  card: [{ type: 'card', pattern: '[0-9](?:[ -]?[0-9]){12,18}', accept: cardAccept, bounded: true }],
  iban: [
    { type: 'iban', pattern: '[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}', accept: ibanAccept, bounded: true },
  ],
  us_ssn: [{ type: 'us_ssn', pattern: '[0-9]{3}-[0-9]{2}-[0-9]{4}', accept: ssnAccept, bounded: true }],
  uk_nino: [
    {
      type: 'uk_nino',
      pattern: '[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]',
      accept: ninoAccept,
      bounded: true,
    },
  ],
  de_tax_id: [
    {
      type: 'de_tax_id',
      pattern: '[1-9][0-9] ?[0-9]{3} ?[0-9]{3} ?[0-9]{3}',
      accept: deTaxIdAccept,
      bounded: true,
    },
  ],
  in_pan: [{ type: 'in_pan', pattern: '[A-Z]{3}[CPHFATBLJG][A-Z][0-9]{4}[A-Z]', bounded: true }],
  ip_address: [
    { type: 'ip_address', pattern: '[0-9]{1,3}(?:\\.[0-9]{1,3}){3}', accept: ipv4Accept, bounded: true },
    {
      type: 'ip_address',
      pattern: '[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}',
      accept: ipv6Accept,
      bounded: true,
    },
  ],
  aws_access_key: [
    { type: 'aws_access_key', pattern: '(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z2-7]{16}', bounded: true },
  ],
  aws_secret_key: [
    {
      type: 'aws_secret_key',
      pattern:
        '(?:aws_?secret_?access_?key|aws_?secret)["\']?[ \\t]{0,3}[:=][ \\t]{0,3}["\']?([A-Za-z0-9/+]{40})',
      flags: 'i',
      group: 1,
    },
  ],
  secret: [
    { type: 'secret', pattern: 'gh[pousr]_[A-Za-z0-9]{36}', bounded: true },
    { type: 'secret', pattern: 'xox[abprs]-[A-Za-z0-9-]{10,48}', bounded: true },
    { type: 'secret', pattern: 'sk_live_[A-Za-z0-9]{24,34}', bounded: true },
    { type: 'secret', pattern: 'AIza[0-9A-Za-z_-]{35}', bounded: true },
  ],
};

/** What a stream holds back for a detector: its longest match (a group's value is within it). */
export function detectorMaxLength(detector: Detector): number {
  return maxMatchLength(detector.pattern);
}

const compiledDetectors = new WeakMap<Detector, LinearRegExp>();

function regexOf(detector: Detector): LinearRegExp {
  let re = compiledDetectors.get(detector);
  if (re === undefined) {
    re = new LinearRegExp(detector.pattern, `g${detector.flags ?? ''}`);
    compiledDetectors.set(detector, re);
  }
  return re;
}

const WORD = /[A-Za-z0-9]/;

/** Every value `detector` finds in `text` (overlaps among them are resolved by `resolveOverlaps`). */
export function runDetector(detector: Detector, text: string): Span[] {
  const re = regexOf(detector);
  const spans: Span[] = [];
  re.lastIndex = 0;
  for (;;) {
    const m = re.exec(text);
    if (m === null) break;
    const whole = m[0];
    const groupText = detector.group ? m[detector.group] : whole;
    const groupStart =
      detector.group && groupText !== undefined ? m.index + whole.lastIndexOf(groupText) : m.index;
    let accepted: number | undefined = groupText === undefined ? undefined : groupText.length;
    if (accepted !== undefined && detector.accept) accepted = detector.accept(groupText as string);
    const end = groupStart + (accepted ?? 0);
    const boundedOk =
      !detector.bounded ||
      (!WORD.test(text[groupStart - 1] ?? '') && !WORD.test(text[end] ?? '') && text[end] !== '@');
    if (accepted !== undefined && accepted > 0 && boundedOk) {
      spans.push({ type: detector.type, start: groupStart, end });
      re.lastIndex = Math.max(end, m.index + 1);
    } else {
      re.lastIndex = m.index + 1;
    }
    if (re.lastIndex >= text.length) break;
  }
  return spans;
}

/** Keeps the longest of overlapping spans (the earlier one on a tie), in text order. */
export function resolveOverlaps(spans: readonly Span[]): Span[] {
  const sorted = [...spans].sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start);
  const kept: Span[] = [];
  for (const span of sorted) {
    if (!kept.some((k) => span.start < k.end && k.start < span.end)) kept.push(span);
  }
  return kept.sort((a, b) => a.start - b.start);
}
