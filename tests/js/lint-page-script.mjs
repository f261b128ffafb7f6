// Lints the HTML report's page script (crates/render/src/html/*.js) with ESLint. Run by
// crates/render/tests/page_script.rs; by hand: `node tests/js/lint-page-script.mjs`.
//
// The files are concatenated into one function scope in the page (crates/render/src/html.rs),
// but each is linted on its own, as a script, so that every name it uses from another file must
// be declared in its header: `/* global Fmt, document */` lists the other files' objects and the
// browser globals it uses (no-undef fails on one it leaves out, no-unused-vars on one it does
// not use), and `/* exported Fmt */` names the one object it declares for the others. The file
// must consist of that one `const`, named after the file (fmt.js declares Fmt).
//
// Prints ESLint's report and exits non-zero on any problem.

import path from 'node:path';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const DIR = path.join(ROOT, 'crates/render/src/html');

const config = {
  files: ['**/*.js'],
  languageOptions: {
    ecmaVersion: 'latest',
    sourceType: 'script',
    // ECMAScript's own globals only (ESLint's default for the ecmaVersion): no browser or node
    // environment, so each browser global a file uses must be in its header.
  },
  linterOptions: { reportUnusedDisableDirectives: 'error', reportUnusedInlineConfigs: 'error' },
  rules: {
    'no-undef': 'error',
    'no-unused-vars': ['error', { vars: 'all', args: 'none' }],
    'no-redeclare': 'error',
    'no-shadow-restricted-names': 'error',
    'no-restricted-syntax': [
      'error',
      { selector: 'Program > :not(VariableDeclaration)', message: 'a page-script file holds only the declaration of its one object' },
      { selector: 'Program > VariableDeclaration ~ *', message: 'a page-script file declares exactly one object' },
      { selector: 'Program > VariableDeclaration[kind!="const"]', message: "a page-script file's object is a const" },
      { selector: 'Program > VariableDeclaration > VariableDeclarator ~ VariableDeclarator', message: 'a page-script file declares exactly one object' },
    ],
  },
};

const files = process.argv.length > 2 ? process.argv.slice(2) : fs.readdirSync(DIR).filter((f) => f.endsWith('.js')).map((f) => path.join(DIR, f));
if (files.length === 0) {
  console.error(`no page-script files in ${DIR}`);
  process.exit(1);
}

// ESLint ignores files outside its cwd: use the directory that holds them all.
let cwd = path.dirname(path.resolve(files[0]));
while (!files.every((f) => path.resolve(f).startsWith(cwd + path.sep))) cwd = path.dirname(cwd);
const eslint = new ESLint({ cwd, overrideConfigFile: true, overrideConfig: config });
const results = await eslint.lintFiles(files);

// The one object must be named after its file and be the one the header exports.
for (const result of results) {
  const source = fs.readFileSync(result.filePath, 'utf8');
  const stem = path.basename(result.filePath, '.js');
  const name = stem[0].toUpperCase() + stem.slice(1);
  const problem = (message) => {
    result.messages.push({ ruleId: 'sonde/one-object', severity: 2, message, line: 1, column: 1 });
    result.errorCount++;
  };
  const exported = [...source.matchAll(/\/\*\s*exported\s+([^*]*)\*\//g)].flatMap((m) => m[1].split(/[\s,]+/).filter(Boolean));
  if (exported.length !== 1 || exported[0] !== name) problem(`the header must say /* exported ${name} */ (it says ${JSON.stringify(exported)})`);
  if (!new RegExp(`^const ${name} = `, 'm').test(source)) problem(`the file must declare \`const ${name} = …\``);
  if (!/\/\*\s*global\s/.test(source)) problem('the header must list what the file uses in /* global … */');
}

const formatter = await eslint.loadFormatter('stylish');
const report = await formatter.format(results);
const errors = results.reduce((n, r) => n + r.errorCount + r.warningCount, 0);
if (errors > 0) {
  console.log(report);
  process.exit(1);
}
console.log(`ok: ${results.length} page-script files (${results.map((r) => path.basename(r.filePath)).join(', ')})`);
