package dev.retsu.lock.quarkus.deployment;

import io.smallrye.health.SmallRyeHealth;
import jakarta.json.JsonObject;
import jakarta.json.JsonValue;

/**
 * The extension's own check in a SmallRye Health answer (Agroal's data source check is beside it).
 */
final class OurCheck {

  private OurCheck() {}

  /** The status of the check {@code retsu-lock}: UP or DOWN; fails when it is missing. */
  static String status(SmallRyeHealth health) {
    for (JsonValue v : health.getPayload().getJsonArray("checks")) {
      JsonObject check = v.asJsonObject();
      if ("retsu-lock".equals(check.getString("name"))) {
        return check.getString("status");
      }
    }
    throw new AssertionError("no retsu-lock check in " + health.getPayload());
  }
}
