// nsbench listening test: MUSHRA (ITU-R BS.1534-3) or P.835 trials, from
// trials.js (window.NSBENCH_TEST). Orders are shuffled per listener from a
// seed; a sound must be heard to its end (the audio "ended" event) before it
// can be rated; at the end the answers are saved as one JSON download.
(function () {
  "use strict";
  const TEST = window.NSBENCH_TEST;
  const MUSHRA_BANDS = ["Bad", "Poor", "Fair", "Good", "Excellent"];
  const P835 = {
    sig: ["Attending only to the speech signal, the speech in this sample was",
          ["Very distorted", "Fairly distorted", "Somewhat distorted", "Slightly distorted", "Not distorted"]],
    bak: ["Attending only to the background, the background in this sample was",
          ["Very intrusive", "Somewhat intrusive", "Noticeable but not intrusive", "Slightly noticeable", "Not noticeable"]],
    ovrl: ["For everyday speech communication, the overall quality of this sample was",
           ["Bad", "Poor", "Fair", "Good", "Excellent"]],
  };
  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------ randomisation
  function fnv1a(text) {
    let hash = 0x811c9dc5;
    for (const ch of text) {
      hash ^= ch.codePointAt(0);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash >>> 0;
  }
  function mulberry32(seed) {
    let state = seed >>> 0;
    return function () {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function shuffled(items, random) {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
  // The trials of a part in this listener's order, each MUSHRA trial's conditions shuffled too.
  function plan(part, seed) {
    const random = mulberry32(seed);
    return shuffled(TEST.parts[part], random).map((trial) =>
      trial.conditions ? Object.assign({}, trial, { conditions: shuffled(trial.conditions, random) }) : trial);
  }
  window.nsbenchPlan = plan;  // for the tests of the randomisation
  window.nsbenchSeed = (listener, part) => fnv1a(`${TEST.test}|${listener}|${part}`);

  // ------------------------------------------------------------------- state
  const state = { listener: "", part: 0, seed: 0, trials: [], index: 0, ratings: [], started: "", trialStart: 0 };
  let playing = null;  // {audio, button}

  function stopPlaying() {
    if (playing) {
      playing.audio.pause();
      playing.button.classList.remove("playing");
      playing.button.textContent = playing.label;
      playing = null;
    }
  }
  // A play/stop button for one sound; onHeard runs when it has played to its end.
  function player(src, label, onHeard) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    const audio = new Audio(src);
    audio.preload = "auto";
    const sound = { plays: 0, heard: false };
    audio.addEventListener("ended", () => {
      sound.heard = true;
      button.classList.add("heard");
      stopPlaying();
      onHeard();
    });
    button.addEventListener("click", () => {
      const mine = playing && playing.audio === audio;
      stopPlaying();
      if (mine) return;
      audio.currentTime = 0;
      sound.plays += 1;
      playing = { audio, button, label };
      button.classList.add("playing");
      button.textContent = "Stop";
      audio.play().catch(() => stopPlaying());
    });
    return { button, sound, audio };
  }

  // ----------------------------------------------------------------- screens
  function instructions() {
    if (TEST.method === "mushra") {
      return "<p>Each screen has a <b>reference</b> and several versions of the same recording, named by letters. " +
        "Play the reference and every version (each to its end), then rate how each version compares with the " +
        "reference on a scale from 0 (bad) to 100 (excellent). One of the versions is the reference itself, " +
        "hidden among them: give it 100. You may play any sound as often as you like.</p>";
    }
    return "<p>You will hear one short recording at a time. Play it to its end, then answer three questions, " +
      "in order: the speech, the background, then the overall quality. You may play it again.</p>";
  }

  function mushraScreen(trial, screen, done) {
    const rows = [];
    const reference = player(trial.reference, "Play reference", () => {});
    const table = document.createElement("table");
    table.className = "mushra";
    table.innerHTML = "<thead><tr><th></th><th></th><th><div class='scale'>" +
      MUSHRA_BANDS.map((band) => `<span>${band}</span>`).join("") + "</div></th><th></th></tr></thead>";
    const body = document.createElement("tbody");
    const refRow = body.insertRow();
    refRow.insertCell().textContent = "Reference";
    refRow.insertCell().appendChild(reference.button);
    refRow.insertCell();
    refRow.insertCell();
    trial.conditions.forEach((condition, position) => {
      const letter = String.fromCharCode(65 + position);
      const row = body.insertRow();
      const slider = document.createElement("input");
      Object.assign(slider, { type: "range", min: 0, max: 100, step: 1, value: 0, disabled: true });
      slider.setAttribute("aria-label", `rating of ${letter}, 0 to 100`);
      slider.dataset.condition = condition.condition;
      const value = document.createElement("output");
      value.textContent = "-";
      const entry = { condition, slider, rated: false, position };
      const sound = player(condition.audio, `Play ${letter}`, () => { slider.disabled = false; });
      sound.button.dataset.condition = condition.condition;
      entry.sound = sound.sound;
      slider.addEventListener("input", () => { entry.rated = true; value.textContent = slider.value; done(); });
      row.insertCell().textContent = letter;
      row.insertCell().appendChild(sound.button);
      row.insertCell().appendChild(slider);
      const cell = row.insertCell();
      cell.className = "value";
      cell.appendChild(value);
      rows.push(entry);
    });
    table.appendChild(body);
    screen.appendChild(table);
    return {
      missing: () => {
        const unheard = rows.filter((r) => !r.sound.heard).length;
        const unrated = rows.filter((r) => !r.rated).length;
        return unheard ? `play ${unheard} more to the end` : unrated ? `rate ${unrated} more` : "";
      },
      answers: () => rows.map((r) => ({
        trial: trial.trial, clip: trial.clip, condition: r.condition.condition, score: Number(r.slider.value),
        plays: r.sound.plays, position: r.position, reference_plays: reference.sound.plays,
      })),
    };
  }

  function p835Screen(trial, screen, done) {
    const groups = {};
    const sound = player(trial.audio, "Play", () => { groups.sig.disabled = false; done(); });
    sound.button.id = "play";
    screen.appendChild(sound.button);
    TEST.scales.forEach((scale, order) => {
      const [question, labels] = P835[scale];
      const set = document.createElement("fieldset");
      set.disabled = true;
      set.dataset.scale = scale;
      set.innerHTML = `<legend>${order + 1}. ${question}</legend>` + [5, 4, 3, 2, 1].map((score) =>
        `<label><input type="radio" name="${scale}" value="${score}"> ${score}: ${labels[score - 1]}</label>`).join("");
      set.addEventListener("change", () => {
        const following = TEST.scales[order + 1];
        if (following) groups[following].disabled = false;
        done();
      });
      groups[scale] = set;
      screen.appendChild(set);
    });
    const chosen = (scale) => {
      const input = groups[scale].querySelector("input:checked");
      return input ? Number(input.value) : null;
    };
    return {
      missing: () => !sound.sound.heard ? "play the sample to its end"
        : TEST.scales.some((s) => chosen(s) === null) ? "answer all three questions" : "",
      answers: () => [Object.assign({ trial: trial.trial, clip: trial.clip, condition: trial.condition,
        plays: sound.sound.plays, position: 0 }, Object.fromEntries(TEST.scales.map((s) => [s, chosen(s)])))],
    };
  }

  let current = null;
  function showTrial() {
    stopPlaying();
    const trial = state.trials[state.index];
    const screen = $("screen");
    screen.textContent = "";
    $("progress").textContent = `Trial ${state.index + 1} of ${state.trials.length}`;
    const update = () => {
      const why = current.missing();
      $("next").disabled = Boolean(why);
      $("why-not").textContent = why ? `(${why})` : "";
    };
    current = (TEST.method === "mushra" ? mushraScreen : p835Screen)(trial, screen, () => update());
    state.trialStart = performance.now();
    update();
    const first = screen.querySelector("button");
    if (first) first.focus();
  }

  function next() {
    if (current.missing()) return;
    stopPlaying();
    const seconds = Math.round((performance.now() - state.trialStart) / 100) / 10;
    current.answers().forEach((answer) => state.ratings.push(Object.assign(answer, { seconds, order: state.index })));
    state.index += 1;
    if (state.index < state.trials.length) {
      showTrial();
    } else {
      $("trial").hidden = true;
      $("done").hidden = false;
      $("save").focus();
    }
  }

  function answers() {
    return {
      format: 1, test: TEST.test, digest: TEST.digest, method: TEST.method, listener: state.listener,
      part: state.part + 1, seed: state.seed, started: state.started, finished: new Date().toISOString(),
      user_agent: navigator.userAgent, ratings: state.ratings,
    };
  }
  window.nsbenchAnswers = answers;
  // For the page's tests: what is on screen (the same opaque ids as trials.js).
  window.nsbenchCurrentTrial = () => state.trials[state.index];
  window.nsbenchCurrentClip = () => state.trials[state.index].clip;

  function save() {
    const blob = new Blob([JSON.stringify(answers(), null, 1)], { type: "application/json" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = `answers-${state.listener}-part${state.part + 1}.json`;
    document.body.appendChild(link);
    link.click();
    link.remove();
    $("saved").textContent = `saved as ${link.download} (in your downloads folder)`;
  }

  function begin(event) {
    event.preventDefault();
    state.listener = $("listener").value.trim();
    state.part = Number($("part").value);
    const asked = new URLSearchParams(location.search).get("seed");
    state.seed = asked !== null && /^\d+$/.test(asked) ? Number(asked) >>> 0 : window.nsbenchSeed(state.listener, state.part);
    state.trials = plan(state.part, state.seed);
    state.started = new Date().toISOString();
    $("start").hidden = true;
    $("trial").hidden = false;
    showTrial();
  }

  function init() {
    if (!TEST) {
      $("instructions").textContent = "trials.js is missing from this folder: the test cannot run.";
      return;
    }
    $("instructions").innerHTML = instructions();
    const parts = $("part");
    TEST.parts.forEach((_, index) => parts.add(new Option(String(index + 1), String(index))));
    const query = new URLSearchParams(location.search);
    if (query.get("listener")) $("listener").value = query.get("listener");
    if (query.get("part")) parts.value = String(Number(query.get("part")) - 1);
    $("start-form").addEventListener("submit", begin);
    $("next").addEventListener("click", next);
    $("save").addEventListener("click", save);
  }
  init();
})();
