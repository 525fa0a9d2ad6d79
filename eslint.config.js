// Lint: the recommended JavaScript and TypeScript rules over our sources and tests, and the
// import direction of src/ (scripts/lint/layers.mjs; cycles are checked by scripts/lint/cycles.mjs).
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import layers from './scripts/lint/layers.mjs'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.cluster/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Plain JavaScript scripts run on Node.
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { layers },
    rules: { 'layers/direction': 'error' },
  },
)
