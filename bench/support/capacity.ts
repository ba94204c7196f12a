/**
 * Write request units computed from what a request writes, by DynamoDB's documented rules
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html, …/GSI.html
 * "Provisioned throughput considerations", …/transaction-apis.html "Capacity management"), for the calls DynamoDB
 * Local does not account for correctly. Measured (bench/cost.bench.ts,
 * test/integration/capacity-calculator.test.ts): DynamoDB Local's `ConsumedCapacity` is right for single-item
 * writes and reads, but under-counts multi-item transactions (bench:cost prints both: "multi-item writes computed
 * by the rules … (DynamoDB Local reported …)").
 *
 * Before-images come from a shadow of every item written through the meter (the benchmark sees every write once
 * it starts); an item the shadow does not know is taken as new.
 */
import type { GsiDeclaration, TableDeclaration } from '#shared/topology.ts';

type AttributeValue = Record<string, unknown>;
type WireItem = Record<string, AttributeValue>;

export interface WriteUnits {
  table: number;
  indexes: Record<string, number>;
  /** Of `indexes`, the units written inside a transaction (counted once; the conservative reading doubles them). */
  indexUnitsInTransactions?: number;
}

/**
 * An attribute value's size: strings UTF-8; numbers about 1 byte per two significant digits + 1; binary its bytes;
 * null and booleans 1 byte; lists and maps 3 bytes + 1 per element. An item's size adds its attribute names.
 */
export function attributeSize(value: AttributeValue): number {
  const [type, inner] = Object.entries(value)[0] ?? ['NULL', true];
  switch (type) {
    case 'S':
      return Buffer.byteLength(String(inner), 'utf8');
    case 'N':
      return numberSize(String(inner));
    case 'B':
      return Buffer.from(String(inner), 'base64').length;
    case 'BOOL':
    case 'NULL':
      return 1;
    case 'SS':
      return (inner as string[]).reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
    case 'NS':
      return (inner as string[]).reduce((n, s) => n + numberSize(s), 0);
    case 'BS':
      return (inner as string[]).reduce((n, s) => n + Buffer.from(s, 'base64').length, 0);
    case 'L': {
      const list = inner as AttributeValue[];
      return 3 + list.reduce((n, v) => n + 1 + attributeSize(v), 0);
    }
    case 'M': {
      const map = inner as Record<string, AttributeValue>;
      return (
        3 +
        Object.entries(map).reduce((n, [k, v]) => n + 1 + Buffer.byteLength(k, 'utf8') + attributeSize(v), 0)
      );
    }
    default:
      return 0;
  }
}

/** About one byte per two significant digits, plus one. */
function numberSize(text: string): number {
  const digits = text
    .replace(/^-/, '')
    .replace(/e.*$/i, '')
    .replace('.', '')
    .replace(/^0+/, '')
    .replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

export function itemSize(item: WireItem, only?: ReadonlySet<string>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    if (only && !only.has(name)) continue;
    size += Buffer.byteLength(name, 'utf8') + attributeSize(value);
  }
  return size;
}

const KB = 1024;
const units = (bytes: number) => Math.max(1, Math.ceil(bytes / KB));

export class CapacityCalculator {
  private readonly shadow = new Map<string, WireItem>();

  constructor(private readonly table: TableDeclaration) {}

  /**
   * Units of one TransactWriteItems or BatchWriteItem request body (DynamoDB JSON); updates the shadow.
   *
   * A transaction performs two underlying writes per item (prepare, commit): its table writes count twice. Its
   * index writes count once — what DynamoDB charges, as measured against DynamoDB by the dynoxide emulator's
   * maintainers (github.com/nubo-db/dynoxide pull request 188: "the transactional 2x factor applies to the base
   * table arm alone; an index arm inside a transaction costs what the same write costs outside one"). DynamoDB
   * Local doubles them (test/integration/capacity-calculator.test.ts shows it), and AWS's pages do not say; so
   * `indexUnitsInTransactions` keeps them apart, for the conservative reading (doubled) to be printed beside.
   */
  writeRequest(operation: string, body: Record<string, unknown>): WriteUnits {
    const total: WriteUnits = { table: 0, indexes: {} };
    const add = (u: WriteUnits, tableFactor: number) => {
      total.table += u.table * tableFactor;
      for (const [k, v] of Object.entries(u.indexes)) total.indexes[k] = (total.indexes[k] ?? 0) + v;
    };
    if (operation === 'TransactWriteItems') {
      for (const action of (body.TransactItems as Record<string, Record<string, unknown>>[]) ?? []) {
        if (action.Put) add(this.put(action.Put.Item as WireItem), 2);
        else if (action.Delete) add(this.delete(action.Delete.Key as WireItem), 2);
        else if (action.Update) add(this.update(action.Update.Key as WireItem), 2);
        else if (action.ConditionCheck) add({ table: 1, indexes: {} }, 2);
      }
      total.indexUnitsInTransactions = Object.values(total.indexes).reduce((a, b) => a + b, 0);
    } else if (operation === 'BatchWriteItem') {
      for (const requests of Object.values((body.RequestItems as Record<string, unknown[]>) ?? {})) {
        for (const r of requests as Record<string, Record<string, unknown>>[]) {
          if (r.PutRequest) add(this.put(r.PutRequest.Item as WireItem), 1);
          else if (r.DeleteRequest) add(this.delete(r.DeleteRequest.Key as WireItem), 1);
        }
      }
    }
    return total;
  }

  /** Keeps the shadow in step with a single-item write DynamoDB accounted for itself. */
  observeSingle(operation: string, body: Record<string, unknown>): WriteUnits {
    if (operation === 'PutItem') return this.put(body.Item as WireItem);
    if (operation === 'DeleteItem') return this.delete(body.Key as WireItem);
    if (operation === 'UpdateItem') return this.update(body.Key as WireItem);
    return { table: 0, indexes: {} };
  }

  put(item: WireItem): WriteUnits {
    const key = this.keyOf(item);
    const before = this.shadow.get(key);
    this.shadow.set(key, item);
    return this.cost(before, item);
  }

  delete(keyItem: WireItem): WriteUnits {
    const key = this.keyOf(keyItem);
    const before = this.shadow.get(key);
    this.shadow.delete(key);
    return this.cost(before, undefined);
  }

  /** An update's after-image is not in the request: taken as the before-image (same size, same index keys). */
  update(keyItem: WireItem): WriteUnits {
    const before = this.shadow.get(this.keyOf(keyItem)) ?? keyItem;
    return this.cost(before, before, true);
  }

  /**
   * A write costs ⌈size / 1 KB⌉ units of the larger of the item before and after it; an index entry costs
   * ⌈projected size / 1 KB⌉ when written; changing an index key costs a delete of the old entry and a put of the
   * new (2 writes); removing the key, one delete.
   */
  private cost(before: WireItem | undefined, after: WireItem | undefined, sameKeys = false): WriteUnits {
    const table = units(Math.max(before ? itemSize(before) : 0, after ? itemSize(after) : 0));
    const indexes: Record<string, number> = {};
    for (const gsi of this.table.gsis) {
      const oldKey = before ? indexKey(gsi, before) : undefined;
      const newKey = after ? indexKey(gsi, after) : undefined;
      let n = 0;
      if (oldKey !== undefined && newKey !== undefined && (oldKey === newKey || sameKeys)) {
        // Same entry rewritten: only when something it projects may have changed.
        n = units(this.projectedSize(gsi, after!));
      } else {
        if (oldKey !== undefined) n += units(this.projectedSize(gsi, before!));
        if (newKey !== undefined) n += units(this.projectedSize(gsi, after!));
      }
      if (n > 0) indexes[gsi.name] = n;
    }
    return { table, indexes };
  }

  private projectedSize(gsi: GsiDeclaration, item: WireItem): number {
    if (!gsi.include) return itemSize(item);
    return itemSize(
      item,
      new Set([this.table.partitionKey, this.table.sortKey, gsi.partitionKey, gsi.sortKey, ...gsi.include]),
    );
  }

  private keyOf(item: WireItem): string {
    return `${JSON.stringify(item[this.table.partitionKey])}\u0000${JSON.stringify(item[this.table.sortKey])}`;
  }
}

function indexKey(gsi: GsiDeclaration, item: WireItem): string | undefined {
  const pk = item[gsi.partitionKey];
  const sk = item[gsi.sortKey];
  return pk && sk ? `${JSON.stringify(pk)}\u0000${JSON.stringify(sk)}` : undefined;
}
