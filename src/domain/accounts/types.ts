/** What a request needs to know of its account. */
export interface AccountInfo {
  id: number;
  sandbox: boolean;
  status: string;
}
