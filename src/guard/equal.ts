// apimachinery's semantic equality (pkg/api/equality/semantic.go) on JSON: resource.Quantity is
// compared by value (`10Gi` == `10240Mi`, `0.5` == `500m`), and a missing list or map equals an
// empty one (the forked reflect.DeepEqual there treats nil and empty alike).

const BINARY: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const QUANTITY = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;

/**
 * A quantity's value in nano-units as a BigInt (ParseQuantity rounds up to 1n), or undefined when
 * the text is not a quantity.
 */
export function quantityNanos(q: unknown): bigint | undefined {
  if (typeof q === 'number') q = String(q);
  if (typeof q !== 'string') return undefined;
  const m = QUANTITY.exec(q.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const digits = `${m[2]}${m[3] ?? ''}`;
  let mantissa = BigInt(digits === '' ? '0' : digits);
  let exp10 = 9 - (m[3] ?? '').length;
  let exp2 = 0;
  if (m[4]) exp10 += Number(m[4].slice(1));
  else if (m[5] && m[5] in BINARY) exp2 = BINARY[m[5]];
  else exp10 += DECIMAL[m[5] ?? ''];
  mantissa *= 2n ** BigInt(exp2);
  let value: bigint;
  if (exp10 >= 0) value = mantissa * 10n ** BigInt(exp10);
  else {
    const d = 10n ** BigInt(-exp10);
    value = (mantissa + d - 1n) / d;
  }
  return m[1] === '-' ? -value : value;
}

/** Keys whose map values are quantities (ResourceList and friends). */
const QUANTITY_MAPS = new Set([
  'limits',
  'requests',
  'capacity',
  'allocatable',
  'overhead',
  'hard',
  'used',
  'allocatedResources',
]);
/** Keys whose value is a single quantity. */
const QUANTITY_FIELDS = new Set(['sizeLimit', 'divisor']);

const isEmpty = (x: unknown) =>
  x === undefined ||
  x === null ||
  (Array.isArray(x) && x.length === 0) ||
  (typeof x === 'object' && x !== null && !Array.isArray(x) && Object.keys(x).length === 0);

function quantityEqual(a: unknown, b: unknown): boolean {
  const qa = quantityNanos(a);
  const qb = quantityNanos(b);
  return qa !== undefined && qb !== undefined ? qa === qb : a === b;
}

/**
 * Semantic equality of two JSON values found under `key`. Empty maps equal absent ones here only
 * after normalize() has decided where `{}` means nothing; this function treats `{}` and absent as
 * different, so a struct pointer set to `{}` (an empty selector) still counts.
 */
export function semanticEqual(a: unknown, b: unknown, key = ''): boolean {
  if (a === b) return true;
  if (QUANTITY_FIELDS.has(key)) return quantityEqual(a, b);
  const aEmptyList = a === undefined || a === null || (Array.isArray(a) && a.length === 0);
  const bEmptyList = b === undefined || b === null || (Array.isArray(b) && b.length === 0);
  if (aEmptyList && bEmptyList) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!semanticEqual(a[i], b[i], '')) return false;
    return true;
  }
  if (
    typeof a === 'object' &&
    a !== null &&
    typeof b === 'object' &&
    b !== null &&
    !Array.isArray(a) &&
    !Array.isArray(b)
  ) {
    const quantities = QUANTITY_MAPS.has(key);
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const va = (a as any)[k];
      const vb = (b as any)[k];
      if (quantities) {
        if (!quantityEqual(va, vb)) return false;
      } else if (!semanticEqual(va, vb, k)) {
        // A missing key equals an empty list or null; a missing map only equals an empty one when
        // normalize pruned it (GO_MAPS and GO_VALUE_STRUCTS in go-fields.ts).
        if (!(
          (va === undefined && isEmpty(vb) && !isObjectValue(vb)) ||
          (vb === undefined && isEmpty(va) && !isObjectValue(va))
        ))
          return false;
      }
    }
    return true;
  }
  return false;
}

const isObjectValue = (x: unknown) => typeof x === 'object' && x !== null && !Array.isArray(x);
