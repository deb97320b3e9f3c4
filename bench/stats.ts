// Paired rounds and their summaries: each round runs every side once, in a rotating order, so slow
// spells of a shared machine fall on all sides alike; figures are medians with their min–max range.

/**
 * One measurement: wall time, and CPU time (user + system, all threads and waited-for children) where
 * known. On a shared machine wall time also counts the time other work held the cores; CPU time
 * does not, so its ratios are the steadier figure of the two.
 */
export interface Sample {
  readonly ms: number;
  readonly cpuMs?: number;
  readonly rssMb?: number;
}

export const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS ?? 5));

/** Runs `rounds` rounds of all sides (the first side first in round 0, second first in round 1, ...). */
export function paired<K extends string>(sides: Record<K, () => Sample>, rounds = ROUNDS): Record<K, Sample[]> {
  const names = Object.keys(sides) as K[];
  const out = Object.fromEntries(names.map(n => [n, [] as Sample[]])) as unknown as Record<K, Sample[]>;
  for (let r = 0; r < rounds; r++) {
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

/** Round-by-round ratios of two sides, by wall time or by CPU time. */
export function ratios(a: Sample[], b: Sample[], of: 'ms' | 'cpuMs' = 'ms'): number[] {
  return a.map((x, i) => (x[of] ?? NaN) / (b[i][of] ?? NaN));
}

export const time = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

/** "median (min–max)" of times. */
export function times(samples: Sample[], of: 'ms' | 'cpuMs' = 'ms'): string {
  const xs = samples.map(s => s[of] ?? NaN);
  if (xs.some(Number.isNaN)) return 'n/a';
  return `${time(median(xs))} (${time(Math.min(...xs))}–${time(Math.max(...xs))})`;
}

/** "wall … CPU …" of a side. */
export function both(samples: Sample[]): string {
  return `wall ${times(samples).padEnd(24)} CPU ${times(samples, 'cpuMs').padEnd(24)}`;
}

/** Wall and CPU ratios of two sides, round by round. */
export function overBoth(a: Sample[], b: Sample[]): string {
  const cpu = ratios(a, b, 'cpuMs');
  return `wall ${factor(ratios(a, b))}, CPU ${cpu.some(Number.isNaN) ? 'n/a' : factor(cpu)}`;
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

/** "median× (min–max)" of ratios. */
export function factor(xs: number[]): string {
  return `${median(xs).toFixed(2)}× (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
}

export function rss(samples: Sample[]): string {
  return `${median(samples.map(s => s.rssMb ?? 0)).toFixed(0)} MiB`;
}
