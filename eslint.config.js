// Promise rules are on on purpose: a worker runtime that drops a promise loses a task.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // An object literal that opens with a spread and goes on with properties takes V8's slow path
    // on Node 20 (~0.5 µs for one property, ~1.8 µs for three, against ~10 ns written out): on a
    // path that runs per request it was most of a poll's cost. Write the object out, or use
    // Object.assign({}, base, { … }) (~80 ns).
    // The operator's commands, the replay and the client library are not on a server's path.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/replay/**', 'src/client.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement:first-child ~ Property',
          message: 'A spread followed by properties is slow on Node 20: write the object out or use Object.assign({}, base, { ... }).',
        },
        {
          selector: "ObjectExpression > Property[kind='get'], ObjectExpression > Property[kind='set']",
          message:
            "An object literal with a getter or setter gets a hidden class of its own each time it is made, and that class keeps the objects its accessor reaches alive past young-generation collections (made per request, it promoted each request's objects): use a class's accessor.",
        },
      ],
    },
  },
  {
    // expect.any() and friends are typed `any` and read as unbound methods; both are fine in tests.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
    },
  },
  {
    files: ['eslint.config.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
