// Types of the layer rule for the TypeScript files that import it (test/architecture.test.ts).
import type { Rule } from 'eslint';

declare const layerImports: Rule.RuleModule;
export default layerImports;
