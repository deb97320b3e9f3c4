// Paired rounds and their summaries: each round runs every side once, in a rotating order, so slow
// spells of a shared machine fall on all sides alike; figures are medians with their min–max range.

/**
 * One measurement: wall time, and CPU time (user + system, all threads and waited-for children) where
 * known; peak RSS and V8 heap where the case reports them. On a shared machine wall time also counts
 * the time other work held the cores; CPU time does not, so its ratios are the steadier figure.
 */
export interface Sample {
  readonly ms: number;
  readonly cpuMs?: number;
  readonly rssMb?: number;
  readonly heapMb?: number;
}

export const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS ?? 5));

/**
 * Runs `rounds` rounds of all sides, rotating who goes first (the first side first in round 0, the
 * second in round 1, ...). `progress` is told before each round.
 */
export function paired<K extends string>(
  sides: Record<K, () => Sample>,
  rounds = ROUNDS,
  progress?: (round: number) => void,
): Record<K, Sample[]> {
  const names = Object.keys(sides) as K[];
  const out = Object.fromEntries(names.map(n => [n, [] as Sample[]])) as unknown as Record<K, Sample[]>;
  for (let r = 0; r < rounds; r++) {
    progress?.(r);
    for (let i = 0; i < names.length; i++) {
      const name = names[(r + i) % names.length];
      out[name].push(sides[name]());
    }
  }
  return out;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

type Of = 'ms' | 'cpuMs';

const values = (samples: Sample[], of: keyof Sample) => samples.map(s => s[of] ?? NaN);

/** Median of one field of the samples (NaN when a sample lacks it). */
export function med(samples: Sample[], of: keyof Sample): number {
  const xs = values(samples, of);
  return xs.some(Number.isNaN) ? NaN : median(xs);
}

/** Round-by-round ratios of two sides, by wall time or by CPU time. */
export function ratios(a: Sample[], b: Sample[], of: Of = 'ms'): number[] {
  return a.map((x, i) => (x[of] ?? NaN) / (b[i][of] ?? NaN));
}

/** Round-by-round differences a − b in ms. */
export function differences(a: Sample[], b: Sample[], of: Of = 'ms'): number[] {
  return a.map((x, i) => (x[of] ?? NaN) - (b[i][of] ?? NaN));
}

const int = (x: number) => Math.round(x).toLocaleString('en-US');

/** "median (min–max)" in ms, e.g. `2,791 (2,702–2,950)`. */
export function msCell(samples: Sample[], of: Of = 'ms'): string {
  return rangeCell(values(samples, of), int);
}

/** "median× (min–max)" of round-by-round ratios. */
export function ratioCell(a: Sample[], b: Sample[], of: Of = 'ms'): string {
  return rangeCell(ratios(a, b, of), x => x.toFixed(2), '×');
}

/** "median (min to max)" of round-by-round differences in ms (a dash would read as a minus). */
export function diffCell(a: Sample[], b: Sample[], of: Of = 'ms'): string {
  return rangeCell(differences(a, b, of), int, '', ' to ');
}

function rangeCell(xs: number[], f: (x: number) => string, unit = '', to = '–'): string {
  if (xs.length === 0 || xs.some(Number.isNaN)) return 'n/a';
  return `${f(median(xs))}${unit} (${f(Math.min(...xs))}${to}${f(Math.max(...xs))})`;
}

/** Median of a memory field in MiB, or "n/a". */
export function mibCell(samples: Sample[], of: 'rssMb' | 'heapMb'): string {
  const m = med(samples, of);
  return Number.isNaN(m) ? 'n/a' : m.toFixed(0);
}

/** CPU time (ms) used so far by this process's waited-for children, from /proc (Linux); undefined elsewhere. */
export function childrenCpuMs(): number | undefined {
  try {
    // Fields after the command name: cutime and cstime are the 14th and 15th, in clock ticks (USER_HZ, 100 on Linux).
    const fields = require('fs')
      .readFileSync('/proc/self/stat', 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}

/** A Markdown table. */
export function table(head: string[], rows: string[][], align: Array<'l' | 'r'> = []): string {
  const sep = head.map((_, i) => (align[i] === 'r' ? '---:' : '---'));
  return [head, sep, ...rows].map(r => `| ${r.join(' | ')} |`).join('\n');
}
