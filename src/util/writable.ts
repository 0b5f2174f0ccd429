/**
 * A readonly model type made writable, for a decoder that builds the object field by field (in
 * the order its readers see) rather than with conditional spreads, the runtime's slow copy.
 */
export type Writable<T> = { -readonly [K in keyof T]: T[K] };
