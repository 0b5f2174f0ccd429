// Lint configuration: typescript-eslint's type-aware recommended rules over the whole tree, and
// the project's layer rule over src/ (eslint-rules/layer-imports.js).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import layerImports from './eslint-rules/layer-imports.js';

export default tseslint.config(
  { ignores: ['dist/**', '.bench-build/**', 'node_modules/**', 'coverage/**', 'scratch/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: [
            'eslint.config.js',
            'eslint-rules/*.js',
            'web/build.mjs',
            'scripts/*.mjs',
            'test/agent/*.mjs',
          ],
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { palisade: { rules: { 'layer-imports': layerImports } } },
    rules: {
      // Layers meet through their index.ts/types.ts; net, model and util are shared vocabulary.
      'palisade/layer-imports': ['error', { root: 'src', shared: ['net', 'model', 'util'] }],
    },
  },
  {
    // Test files, and the modules that register tests into a suite (fault trials).
    files: ['**/*.test.ts', 'test/**/fault-trials/*.ts'],
    rules: {
      // node:test's describe/it return promises that the runner itself awaits.
      '@typescript-eslint/no-floating-promises': 'off',
    },
  },
  {
    files: ['eslint.config.js', 'eslint-rules/**/*.js', 'web/build.mjs', 'scripts/*.mjs', 'test/agent/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
