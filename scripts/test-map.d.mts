// Types of scripts/test-map.mjs, for the TypeScript test that imports it (test/test-map.test.ts).
export interface ModuleUses {
  readonly whole: Set<string>;
  readonly named: [string, string][];
  readonly reExports: Map<string, [string, string]>;
  readonly stars: string[];
  readonly commands: Map<string, string[]>;
}
export interface Dependencies {
  readonly edges: Map<string, Set<string>>;
  readonly commands: Map<string, string[]>;
}
export declare function sourceFiles(root: string, dir: string): string[];
export declare function moduleUses(root: string, files: readonly string[]): Map<string, ModuleUses>;
export declare function dependencies(modules: Map<string, ModuleUses>): Dependencies;
export declare function reachedBy(
  root: string,
  testFile: string,
  dependencies: Dependencies,
): Map<string, number>;
