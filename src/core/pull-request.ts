// Which GitHub events a pull request starts: range resolution takes their base and head from
// the payload, and the pull-request policy keeps them off the cluster.

/** Events a pull request starts (a fork's too): their payload carries the pull request. */
export const PULL_REQUEST_EVENTS: ReadonlySet<string> = new Set(['pull_request', 'pull_request_target', 'pull_request_review', 'pull_request_review_comment'])
