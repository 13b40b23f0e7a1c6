// s3rver ships no types; the test helper uses a few of its members.
declare module 's3rver';
