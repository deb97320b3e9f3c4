// ESLint with typescript-eslint's type-aware rules; formatting is Prettier's (eslint-config-prettier
// turns off the stylistic rules that would fight it). `npm test` runs both.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['lib/**', 'dist/**', 'node_modules/**', 'coverage/**', '.cache/**', 'snapshots/**', 'bench/start.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { project: ['./tsconfig.dev.json'], tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Type-aware rules that catch real defects: promises nobody awaits, impossible conditions,
      // switches that miss a case, assertions that do nothing.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // The code reads API JSON of any shape; `any` is used on purpose where the schema checks it.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Loading on first use keeps `require('cdk8s-gpu')` fast (the guard, the API definitions).
      '@typescript-eslint/no-require-imports': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // The library uses cdk8s and constructs only through their public API (issue #18): no patched
    // prototypes, no properties defined on objects it does not own.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "AssignmentExpression > MemberExpression.left > MemberExpression.object[property.name='prototype']",
          message: 'Do not patch prototypes: use dependencies only through their public API.',
        },
        {
          selector:
            'CallExpression[callee.object.name=/^(Object|Reflect)$/][callee.property.name=/^(defineProperty|defineProperties|setPrototypeOf)$/]',
          message:
            'Do not define properties on objects the library does not own: use dependencies only through their public API.',
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        __dirname: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        globalThis: 'readonly',
      },
    },
  },
  prettier,
  {
    // After eslint-config-prettier, which turns max-len off.
    files: ['**/*.ts'],
    rules: {
      // Prettier wraps code at 120 columns; this holds comments to it too. Long messages stay whole
      // strings, so that a user can find an error's text in the source.
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
    },
  },
);
