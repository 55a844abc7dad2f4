/**
 * What an answer claims about the money: the words by which a refusal (its message, or the
 * hint the MCP layer gives with it) says that nothing of its purchase was charged or paid.
 * One pattern for the error table's test and the hostile suites' ledger check.
 */
export const SAYS_UNCHARGED = /nothing was (?:signed or |sent or |signed and nothing was )?(?:charged|paid)\b/i;

/** Whether the words say nothing was charged or paid. */
export const saysUncharged = (...words: Array<string | undefined>): boolean =>
  words.some((w) => w !== undefined && SAYS_UNCHARGED.test(w));
