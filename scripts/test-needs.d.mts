// Types of scripts/test-needs.mjs, for the TypeScript tests that import it (test/test-names.test.ts).
export declare const NEEDS: Readonly<Record<'browser' | 'etcd' | 'neutron' | 'root', string>>;
export declare function needsOfName(file: string): string[];
export interface NeedOptions {
  readonly only: string[] | undefined;
  readonly without: string[];
}
export declare function parseNeedOptions(args: readonly string[]): NeedOptions & { readonly rest: string[] };
export declare function selectedByNeeds(file: string, options: NeedOptions): boolean;
