// Package autoconfig turns configuration — YAML files and environment
// variables — into a ready Strata memory manager, so that an application
// enables and tunes hierarchical memory with configuration, not code.
//
// # Loading
//
// Load reads, in increasing order of precedence: the defaults (Default), each
// YAML file given, and the environment. Keys are arc-reactor's property names
// under the arc.reactor root, so the memory section of an existing arc-reactor
// (Spring) application.yaml works unchanged:
//
//	arc:
//	  reactor:
//	    memory:
//	      summary:
//	        enabled: true
//	        trigger-message-count: 20
//	        recent-message-count: 10
//	    llm:
//	      max-conversation-turns: 10
//	spring:
//	  datasource:
//	    url: jdbc:postgresql://localhost:5432/app
//
// Strata's own keys live under arc.reactor.memory as well (summarizer,
// datasource, store, policy, and server for strata serve); Keys lists them
// all and config.example.yaml at the root of the module shows every key with
// its default and meaning.
//
// The one list-valued key, arc.reactor.memory.server.api-keys, binds API
// keys to user ids without putting secrets in the file:
//
//	arc.reactor.memory.server.api-keys:
//	  - {user-id: web-backend, key-env: STRATA_KEY_WEB}   # key read from $STRATA_KEY_WEB
//	  - {user-id: voice-app, sha256: 9f86d08…}           # sha256sum of the key
//
// In the environment (ARC_REACTOR_MEMORY_SERVER_API_KEYS) and in overrides
// it is a JSON list or the compact form
// "web-backend=key-env:STRATA_KEY_WEB,voice-app=sha256:9f86d08…".
//
// Every key has an environment variable: the key upper-cased with "." and "-"
// replaced by "_" (ARC_REACTOR_MEMORY_SUMMARY_TRIGGER_MESSAGE_COUNT,
// SPRING_DATASOURCE_URL). Spring's own form, with the dashes removed
// (ARC_REACTOR_MEMORY_SUMMARY_TRIGGERMESSAGECOUNT), is accepted too. The
// variables are looked up in a table built from the key list, so kebab-case
// keys map correctly.
//
// In YAML, keys are matched the way Spring's relaxed binding matches them:
// case-insensitively and ignoring "-" and "_" (trigger-message-count,
// triggerMessageCount and trigger_message_count are the same key). A key
// under arc.reactor.memory that Strata does not know is an error naming it,
// with the closest known key as a suggestion, so typos never pass silently;
// keys outside the subtrees Strata reads (arc.reactor.memory,
// arc.reactor.llm, spring.datasource) and unknown keys under arc.reactor.llm
// and spring.datasource are ignored, so a whole application.yaml loads.
// String values may use Spring placeholders, ${NAME} or ${NAME:default},
// resolved from the environment.
//
// The configuration is validated as it is loaded (Config.Validate); every
// error names the key, the value, where the value came from and the allowed
// range.
//
// # Building
//
// Build returns a memory.Manager wired as the configuration says: with
// summaries off, a takeLast-only manager; with summaries on, a summary store
// and a summarizer (the offline extractive one by default, Gemini with a
// response schema, or OpenAI and any OpenAI-compatible server in JSON mode).
// A datasource URL switches both stores to PostgreSQL and, unless
// datasource.migrate-on-start is false, applies the schema migrations first.
// BuildRuntime does the same and also returns the stores, the summarizer and
// a Close that releases the database pool.
package autoconfig
