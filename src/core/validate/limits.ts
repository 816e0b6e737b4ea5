/** The limits of one validation unless the user sets others: declared once for every front (CLI, MCP, the editor). */

/** Memory of the sandbox that runs a pulled file and its original, in MB. */
export const DEFAULT_MEMORY_MB = 4096;
/** Seconds one validation may take. */
export const DEFAULT_TIMEOUT_S = 120;
