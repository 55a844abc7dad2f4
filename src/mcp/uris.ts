/** The URIs of this server's resources. */
export const executionUri = (executionId: string) => `paid-actions://executions/${executionId}`;
export const transcriptUri = (callId: string) => `paid-actions://transcripts/${callId}`;
export const purchaseUri = (intentId: string) => `paid-actions://purchases/${intentId}`;
export const purchaseBodyUri = (intentId: string) => `paid-actions://purchases/${intentId}/body`;
export const receiptUri = (id: string) => `paid-actions://receipts/${id}`;
