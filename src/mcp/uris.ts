/** The URIs of this server's resources. */
export const executionUri = (executionId: string) => `paid-actions://executions/${executionId}`;
export const transcriptUri = (callId: string) => `paid-actions://transcripts/${callId}`;
