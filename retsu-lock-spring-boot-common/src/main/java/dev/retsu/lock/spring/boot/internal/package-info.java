/**
 * Implementation details shared by the Spring Boot line modules; not API, may change in any
 * release.
 */
package dev.retsu.lock.spring.boot.internal;
