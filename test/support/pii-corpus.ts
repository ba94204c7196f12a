/**
 * A corpus of texts with known PII spans, generated deterministically (a seeded PRNG; no data set is copied, so it
 * carries no licence but the repository's): positive texts hold one or two values of a type at known positions,
 * negative texts hold look-alikes that are not values — cards failing Luhn, IBANs with wrong check digits, SSNs in
 * never-issued ranges, NINOs with prefixes HMRC never allocates, tax ids failing their check digit, out-of-range
 * IPs, order numbers, dates, versions, prices. `test/unit/rooms/guardrails/pii-corpus.test.ts` and
 * `bench/guardrails.bench.ts` score the detectors on it.
 */
import { deTaxIdCheckDigit, luhnValid, type PiiType } from '#shared/rooms/guardrails/detectors.ts';

export interface CorpusText {
  readonly text: string;
  readonly spans: readonly { type: PiiType; start: number; end: number }[];
  /** The type a negative text imitates (its look-alike). */
  readonly imitates?: PiiType;
}

/** mulberry32: small, seeded, the same sequence on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  constructor(readonly next: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T;
  }
  digits(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += String(this.int(0, 9));
    return s;
  }
  letters(n: number, set = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'): string {
    let s = '';
    for (let i = 0; i < n; i++) s += set[this.int(0, set.length - 1)];
    return s;
  }
}

function luhnComplete(partial: string): string {
  for (let d = 0; d <= 9; d++) if (luhnValid(partial + d)) return partial + d;
  throw new Error('unreachable');
}

function ibanOf(country: string, bban: string): string {
  const moved = `${bban}${country}00`;
  let rest = 0;
  for (const ch of moved) {
    const v = ch >= 'A' ? String(ch.charCodeAt(0) - 55) : ch;
    for (const digit of v) rest = (rest * 10 + Number(digit)) % 97;
  }
  const check = String(98 - rest).padStart(2, '0');
  return `${country}${check}${bban}`;
}

const grouped = (s: string) => s.replace(/(.{4})/g, '$1 ').trim();

const FIRST = ['anna', 'ben', 'chloe', 'dev', 'emre', 'fatima', 'gus', 'hana', 'ivan', 'jo'];
const LAST = ['smith', 'okafor', 'mueller', 'tanaka', 'rossi', 'khan', 'silva', 'novak'];
const DOMAINS = ['example.com', 'mail.example.org', 'corp.example.co.uk', 'example.net', 'shop.example.de'];
const TAX_ID_DIGITS = '0123456789';

function value(g: Gen, type: PiiType): string {
  switch (type) {
    case 'email':
      return `${g.pick(FIRST)}${g.pick(['.', '_', ''])}${g.pick(LAST)}${g.int(0, 1) ? g.int(1, 99) : ''}@${g.pick(DOMAINS)}`;
    case 'phone':
      return g.pick([
        () => `+1 ${g.int(201, 989)} ${g.int(200, 999)} ${g.digits(4)}`,
        () => `+44 20 ${g.digits(4)} ${g.digits(4)}`,
        () => `+49 30 ${g.digits(8)}`,
        () => `(${g.int(201, 989)}) ${g.int(200, 999)}-${g.digits(4)}`,
        () => `${g.int(201, 989)}-${g.int(200, 999)}-${g.digits(4)}`,
        () => `+33 6 ${g.digits(2)} ${g.digits(2)} ${g.digits(2)} ${g.digits(2)}`,
      ])();
    case 'card': {
      const [prefix, length] = g.pick([
        ['4', 16],
        ['51', 16],
        ['55', 16],
        ['2221', 16],
        ['37', 15],
        ['6011', 16],
      ] as const);
      const n = luhnComplete(prefix + g.digits(length - prefix.length - 1));
      return g.pick([n, grouped(n), n.replace(/(.{4})/g, '$1-').replace(/-$/, '')]);
    }
    case 'iban': {
      const [country, bban] = g.pick([
        ['DE', () => g.digits(18)],
        ['GB', () => `${g.letters(4)}${g.digits(14)}`],
        ['FR', () => g.digits(23)],
        ['NL', () => `${g.letters(4)}${g.digits(10)}`],
        ['ES', () => g.digits(20)],
      ] as const);
      const iban = ibanOf(country, bban());
      return g.int(0, 1) ? grouped(iban) : iban;
    }
    case 'us_ssn':
      return `${String(g.int(1, 899)).padStart(3, '0').replace(/^666$/, '667')}-${String(g.int(1, 99)).padStart(2, '0')}-${String(g.int(1, 9999)).padStart(4, '0')}`;
    case 'uk_nino': {
      const first = g.pick([...'ACEHJKLMPRSTWXY']);
      const second = g.pick([...'ACEHJLMPRSWXYZ']);
      const nino = `${first}${second}${g.digits(6)}${g.pick([...'ABCD'])}`;
      return g.int(0, 1)
        ? nino
        : `${nino.slice(0, 2)} ${nino.slice(2, 4)} ${nino.slice(4, 6)} ${nino.slice(6, 8)} ${nino[8]}`;
    }
    case 'de_tax_id': {
      for (;;) {
        // Ten digits with exactly one repeated once: nine distinct digits and one of them twice.
        const pool = [...TAX_ID_DIGITS].sort(() => g.next() - 0.5).slice(0, 9);
        const twice = g.pick(pool);
        const ten = [...pool, twice].sort(() => g.next() - 0.5).join('');
        if (ten[0] === '0' || /(\d)\1\1/.test(ten)) continue;
        return `${ten}${deTaxIdCheckDigit(ten)}`;
      }
    }
    case 'in_pan':
      return `${g.letters(3)}${g.pick([...'CPHFATBLJG'])}${g.letters(1)}${g.digits(4)}${g.letters(1)}`;
    case 'ip_address':
      return g.int(0, 3)
        ? `${g.int(1, 223)}.${g.int(0, 255)}.${g.int(0, 255)}.${g.int(1, 254)}`
        : `2001:db8:${g.int(1, 0xffff).toString(16)}::${g.int(1, 0xffff).toString(16)}`;
    case 'aws_access_key':
      return `${g.pick(['AKIA', 'ASIA'])}${g.letters(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}`;
    case 'aws_secret_key':
      return g.letters(40, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+');
    case 'secret':
      return g.pick([
        () => `ghp_${g.letters(36, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789')}`,
        () => `xoxb-${g.digits(12)}-${g.letters(24, 'abcdefghijklmnopqrstuvwxyz0123456789')}`,
        () => `sk_live_${g.letters(24, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789')}`,
      ])();
  }
}

const POSITIVE_TEMPLATES: Readonly<Record<PiiType, readonly string[]>> = {
  email: ['Please write to {v} about the refund.', 'Contact: {v}', 'cc {v}, thanks!'],
  phone: ['Call me on {v} after six.', 'Phone: {v}', 'My number is {v}.'],
  card: ['Charge card {v} for the order.', 'card number {v}, expiry 09/27', 'I paid with {v} yesterday'],
  iban: ['Transfer it to {v} please.', 'IBAN: {v}', 'Account {v} (Berlin branch)'],
  us_ssn: ['SSN {v} on the form.', 'My social is {v}.'],
  uk_nino: ['NI number {v}', 'National Insurance: {v}.'],
  de_tax_id: ['Steuer-IdNr {v}', 'tax id {v} for the return'],
  in_pan: ['PAN {v} attached.', 'my PAN is {v}'],
  ip_address: ['The login came from {v} at noon.', 'Blocked host {v}.'],
  aws_access_key: ['aws_access_key_id = {v}', 'the key {v} leaked'],
  aws_secret_key: ['aws_secret_access_key = {v}', 'AWS_SECRET={v}'],
  secret: ['token: {v}', 'export TOKEN={v}'],
};

/** Look-alikes: text that resembles a type but holds no value of it. */
function lookAlike(g: Gen, type: PiiType): string {
  switch (type) {
    case 'email':
      return g.pick([
        'Reply @ me on the forum',
        'the user@ handle',
        `version ${g.int(1, 9)}.${g.int(0, 9)}@latest`,
        'email me at anna dot smith',
      ]);
    case 'phone':
      return g.pick([
        `order #${g.digits(6)}`,
        `on ${2020 + g.int(0, 6)}-0${g.int(1, 9)}-1${g.int(0, 9)}`,
        `room ${g.digits(3)}`,
        `it costs ${g.digits(3)}.${g.digits(2)} EUR`,
      ]);
    case 'card': {
      const valid = luhnComplete(`4${g.digits(14)}`);
      const wrong = valid.slice(0, 15) + String((Number(valid[15]) + g.int(1, 9)) % 10);
      return g.pick([wrong, grouped(wrong)]);
    }
    case 'iban': {
      const good = ibanOf('DE', g.digits(18));
      const check = Number(good.slice(2, 4));
      const bad = `DE${String((check + g.int(1, 50)) % 97 || 1).padStart(2, '0')}${good.slice(4)}`;
      return bad === good ? `DE00${good.slice(4)}` : bad;
    }
    case 'us_ssn':
      return g.pick([
        `000-${g.digits(2)}-${g.digits(4)}`,
        `666-1${g.digits(1)}-${g.digits(4)}`,
        `9${g.digits(2)}-${g.digits(2)}-${g.digits(4)}`,
        `123-00-${g.digits(4)}`,
      ]);
    case 'uk_nino':
      return `${g.pick(['BG', 'GB', 'NK', 'TN', 'ZZ'])}${g.digits(6)}${g.pick([...'ABCD'])}`;
    case 'de_tax_id': {
      const v = value(g, 'de_tax_id');
      return v.slice(0, 10) + String((Number(v[10]) + 1) % 10);
    }
    case 'in_pan':
      return `${g.letters(3)}${g.pick([...'DEIKMNOQRSUVWXYZ'])}${g.letters(1)}${g.digits(4)}${g.letters(1)}`;
    case 'ip_address':
      return g.pick([
        `${g.int(256, 999)}.${g.int(0, 255)}.1.1`,
        `version 1.${g.int(0, 9)}.${g.int(0, 9)}`,
        `at 12:${g.int(10, 59)}:${g.int(10, 59)}`,
      ]);
    case 'aws_access_key':
      return `AKIA${g.letters(10, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}`;
    case 'aws_secret_key':
      return `the build hash is ${g.letters(40, 'abcdef0123456789')}`;
    case 'secret':
      return `ghp_${g.letters(12, 'abcdefghijklmnopqrstuvwxyz')}`;
  }
}

const FILLER = [
  'Thanks for your help with the delivery.',
  'The meeting moved to Thursday.',
  'See the attached report, page 4.',
  'We shipped 12 items in 3 boxes.',
  'Reference ABC-123 is closed.',
];

export const CORPUS_TYPES: readonly PiiType[] = [
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
];

/** `perType` positive and `perType` negative texts per type, the same on every run for a seed. */
export function piiCorpus(perType = 20, seed = 38): { positive: CorpusText[]; negative: CorpusText[] } {
  const g = new Gen(prng(seed));
  const positive: CorpusText[] = [];
  const negative: CorpusText[] = [];
  for (const type of CORPUS_TYPES) {
    for (let i = 0; i < perType; i++) {
      const template = g.pick(POSITIVE_TEMPLATES[type]);
      const v = value(g, type);
      const lead = g.int(0, 2) === 0 ? `${g.pick(FILLER)} ` : '';
      const at = lead.length + template.indexOf('{v}');
      positive.push({
        text: `${lead}${template.replace('{v}', v)}`,
        spans: [{ type, start: at, end: at + v.length }],
      });
      negative.push({
        text: `${g.pick(FILLER)} ${lookAlike(g, type)} ${g.pick(FILLER)}`,
        spans: [],
        imitates: type,
      });
    }
  }
  return { positive, negative };
}

export interface TypeScore {
  readonly type: PiiType;
  readonly truePositives: number;
  readonly falsePositives: number;
  readonly falseNegatives: number;
  readonly recall: number;
  readonly precision: number;
}

/**
 * Recall and precision per type of `find` on the corpus: a found span counts when its type and position match a
 * known span exactly; anything else it finds is a false positive of its type.
 */
export function scoreCorpus(
  texts: readonly CorpusText[],
  find: (text: string) => readonly { type: string; start?: number | undefined; end?: number | undefined }[],
): TypeScore[] {
  const counts = new Map<string, { tp: number; fp: number; fn: number }>(
    CORPUS_TYPES.map((t) => [t, { tp: 0, fp: 0, fn: 0 }]),
  );
  for (const t of texts) {
    const found = find(t.text);
    const matched = new Set<number>();
    for (const span of t.spans) {
      const c = counts.get(span.type) as { tp: number; fp: number; fn: number };
      const at = found.findIndex((f) => f.type === span.type && f.start === span.start && f.end === span.end);
      if (at >= 0) {
        c.tp++;
        matched.add(at);
      } else c.fn++;
    }
    found.forEach((f, i) => {
      if (matched.has(i)) return;
      const c = counts.get(f.type);
      if (c) c.fp++;
    });
  }
  return CORPUS_TYPES.map((type) => {
    const c = counts.get(type) as { tp: number; fp: number; fn: number };
    return {
      type,
      truePositives: c.tp,
      falsePositives: c.fp,
      falseNegatives: c.fn,
      recall: c.tp + c.fn === 0 ? 1 : c.tp / (c.tp + c.fn),
      precision: c.tp + c.fp === 0 ? 1 : c.tp / (c.tp + c.fp),
    };
  });
}
