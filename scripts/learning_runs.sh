#!/usr/bin/env bash
# The learning runs reported in the issues: 15-minute tictactoe and connect_four runs,
# plain self-play and league, then evaluations (exploitability, reference bots, and
# league vs self-play head to head). Writes into ${RUNS:-runs/learning}; ~70 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-runs/learning}"
MINUTES="${MINUTES:-15}"
GAMES="${GAMES:-1000}"
L=.venv/bin/league
mkdir -p "$RUNS"

steps_of() { .venv/bin/python -c "import json,sys; print(json.load(open(sys.argv[1]))['env_steps'])" "$1/checkpoints/latest.json"; }

for game in tictactoe connect_four; do
    for mode in selfplay league; do
        dir="$RUNS/$game-$mode"
        if [ ! -f "$dir/checkpoints/latest.json" ]; then
            extra=()
            if [ "$mode" = league ]; then  # the same env-step budget as self-play had
                extra=(--stop-timesteps "$(steps_of "$RUNS/$game-selfplay")")
            fi
            $L train --env "$game" --mode "$mode" --run-dir "$dir" \
                --stop-minutes "$MINUTES" "${extra[@]}" > "$RUNS/$game-$mode.train.log" 2>&1
        fi
        echo "$game $mode: $(steps_of "$dir") env steps"
    done
done

for mode in selfplay league; do
    for opp in random minimax; do
        $L evaluate --run-dir "$RUNS/tictactoe-$mode" --opponent $opp --games "$GAMES"
    done
    for opp in random search; do
        $L evaluate --run-dir "$RUNS/connect_four-$mode" --opponent $opp --games "$GAMES"
    done
done
echo "connect_four head to head: league main vs self-play main"
$L evaluate --run-dir "$RUNS/connect_four-league" --games $((GAMES / 2)) \
    --opponent "$RUNS/connect_four-selfplay/players/main_0"
