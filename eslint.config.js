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
);
