"""Reply deliveries: each part of a reply with its state; `DeliveryStore` is what the outbox uses."""
