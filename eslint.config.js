// ESLint: the recommended rules of ESLint and typescript-eslint, and the size rules of
// STYLE.md (a function fits a screen, a file one sitting). Line shape is Prettier's.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "coverage/", ".bundle/", ".bench/", "test/output/", "node_modules/"] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", caughtErrors: "none" }],
      "max-lines": ["error", { max: 400 }],
    },
  },
  {
    files: ["src/console/assets/**/*.js"],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // Tests read untyped JSON answers; the engine's readers never cast.
    files: ["test/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    files: ["src/**"],
    rules: {
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // Under Node 24, a better-sqlite3 statement left to the garbage collector aborts the
    // process: statements are made only by the two caches that keep them (docs/dependencies.md).
    files: ["src/**/*.ts"],
    ignores: ["src/sandbox/db.ts", "src/engine/journal/sqlite-records.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.property.name='pragma']",
          message: "pragma() makes a statement the garbage collector destroys (an abort under Node 24): use exec().",
        },
        {
          selector: "CallExpression[callee.property.name='prepare'][callee.object.name='db']",
          message: "Prepare through statement() (src/sandbox/db.ts) or sql() (the journal), which keep statements.",
        },
        {
          selector: "CallExpression[callee.property.name='prepare'][callee.object.property.name='db']",
          message: "Prepare through statement() (src/sandbox/db.ts) or sql() (the journal), which keep statements.",
        },
      ],
    },
  },
);
