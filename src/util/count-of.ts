/** `1 namespace`, `2 namespaces`; `many` for words that do not just take an s (`policies`). */
export function countOf(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
