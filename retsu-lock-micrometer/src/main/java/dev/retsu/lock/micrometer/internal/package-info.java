/**
 * Implementation details of {@code dev.retsu.lock.micrometer}; not API, may change in any release.
 */
package dev.retsu.lock.micrometer.internal;
