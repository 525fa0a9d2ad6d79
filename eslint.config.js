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
    // Untrusted text reaches the log only through src/lib/untrusted.ts: printing is left to the
    // entries that publish (the action, the CLI entry, the watch log sink), which sanitise every line.
    files: ['src/**/*.ts'],
    ignores: ['src/entry/**', 'src/modes/watch/log.ts'],
    rules: {
      'no-console': 'error',
      'no-restricted-syntax': [
        'error',
        { selector: "ImportDeclaration[source.value='@actions/core']", message: 'Only the action entry talks to @actions/core (it sanitises each line).' },
        { selector: "MemberExpression[object.name='process'][property.name=/^std(out|err)$/]", message: 'Print through the entry, whose lines pass logLine.' },
      ],
    },
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
