// Package recovery holds the records Herald keeps to resume work later or
// find work that was lost: the due index's partitions and the release
// messages that name them, the in-flight watches over sent work messages
// (when one is stuck, and how long to wait), and the relay's failure notes
// for herald dlq redrive relay. It is pure: the scheduler, the relay, the
// operator commands and the table adapter share it, and the domain keeps
// only the vocabulary they use (docs/architecture.md).
package recovery
