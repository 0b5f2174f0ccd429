/**
 * How many cases a property test tries. Each test states a default small enough that `npm test`
 * stays within its time budget on a 2-core machine; `PALISADE_PROPERTY_RUNS=N` replaces every
 * default with N for a long local run (or a quick one), scaled by the test's own ratio.
 */
export function propertyRuns(byDefault: number, ratio = 1): number {
  const asked = process.env.PALISADE_PROPERTY_RUNS;
  const base = asked === undefined || asked === '' ? byDefault : Number(asked);
  if (!Number.isFinite(base) || base < 1)
    throw new Error(`PALISADE_PROPERTY_RUNS must be a positive number, not ${asked}`);
  return Math.max(1, Math.ceil(base * ratio));
}
