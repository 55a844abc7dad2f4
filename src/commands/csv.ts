/**
 * CSV for the books (RFC 4180): a header row, CRLF line ends, a field quoted when it holds a
 * comma, a quote or a line break (its quotes doubled). A field a spreadsheet would read as a
 * formula — one starting with = + - @, a tab or a carriage return — gets a leading
 * apostrophe, so that opening the export never runs what an agent or a seller wrote into it.
 */

/** One field as written. */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** The whole file: the header, then one line per row (every row as long as the header). */
export function toCsv(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  return [header, ...rows].map((r) => `${r.map(csvField).join(",")}\r\n`).join("");
}
